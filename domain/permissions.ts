/** Permissions are `<area>:<read|write>`; write implies read. Live and test keys hold all of them. */
export const AREAS = [
  'billing', 'commerce', 'crm', 'erp', 'communications', 'payments',
  'shipping', 'warehouses', 'rewards', 'analytics', 'webhooks',
] as const;
export type Area = (typeof AREAS)[number];
export type Access = 'read' | 'write';
export type Permission = `${Area}:${Access}`;

export const ALL_PERMISSIONS = '*';

const PERMISSION = new RegExp(`^(${AREAS.join('|')}):(read|write)$`);

export function isPermission(value: string): value is Permission {
  return PERMISSION.test(value);
}

/** True when a key holding `granted` may perform `required`. */
export function allows(granted: readonly string[], required: Permission): boolean {
  if (granted.includes(ALL_PERMISSIONS)) return true;
  if (granted.includes(required)) return true;
  const [area, access] = required.split(':');
  return access === 'read' && granted.includes(`${area}:write`);
}
