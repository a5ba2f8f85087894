/**
 * Permissions are `<scope>:<read|write>`; write implies read. Live and test keys hold all of them.
 * The scopes are those the areas declare (their descriptors' `permissions`, gathered by
 * domain/registry.ts).
 */
export type Access = 'read' | 'write';
export type Permission = `${string}:${Access}`;

export const ALL_PERMISSIONS = '*';

/** True when `value` is `<scope>:read` or `<scope>:write` for one of `scopes`. */
export function isPermission(value: string, scopes: readonly string[]): value is Permission {
  const [scope, access, ...rest] = value.split(':');
  return rest.length === 0 && (access === 'read' || access === 'write') && scopes.includes(scope!);
}

/** True when a key holding `granted` may perform `required`. */
export function allows(granted: readonly string[], required: Permission): boolean {
  if (granted.includes(ALL_PERMISSIONS)) return true;
  if (granted.includes(required)) return true;
  const [area, access] = required.split(':');
  return access === 'read' && granted.includes(`${area}:write`);
}
