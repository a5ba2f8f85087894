/** The part of `negotiator` (installed with Express; no bundled types) that api/http/negotiate.ts uses. */
declare module 'negotiator' {
  export default class Negotiator {
    constructor(request: { headers: Record<string, string | string[] | undefined> });
    /** The `available` types the request accepts, most preferred first (q-values, then specificity, then order). */
    mediaTypes(available?: string[]): string[];
  }
}
