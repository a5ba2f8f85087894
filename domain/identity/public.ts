/**
 * What other areas (the dashboard) use of identity: dashboard sessions and their CSRF check, the
 * account's members, and the account's OAuth clients.
 */
export type { DashboardRole, MemberView } from './users.ts';
export { DASHBOARD_ROLES, addMember, changeMemberRole, createUser, listMembers, removeMember } from './users.ts';
export type { DashboardSession } from './sessions.ts';
export { CSRF_HEADER, SESSION_COOKIE, checkCsrf, sessionFromRequest } from './sessions.ts';
export type { CreateOAuthClientInput, GrantType, OAuthClientView } from './clients.ts';
export { GRANT_TYPES, OIDC_SCOPES, createOAuthClient, listOAuthClients, revokeOAuthClient } from './clients.ts';
