/** postal-codes-js ships no types: the one function the shipping area uses. */
declare module 'postal-codes-js' {
  /** True when `postalCode` is valid for the country (alpha-2 or alpha-3), else a message. */
  export function validate(countryCode: string, postalCode: string): true | string;
  const api: { validate: typeof validate };
  export default api;
}
