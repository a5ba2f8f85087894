/**
 * What the dashboard uses of the identity area: the signed-in user of a request, the CSRF check,
 * the account's members and its OAuth clients. One module, so the router's files name identity in
 * one place.
 */
export {
  DASHBOARD_ROLES, GRANT_TYPES, OIDC_SCOPES, addMember, changeMemberRole, checkCsrf, createOAuthClient, listMembers,
  listOAuthClients, removeMember, revokeOAuthClient, sessionFromRequest,
  type DashboardRole, type DashboardSession, type MemberView, type OAuthClientView,
} from '../identity/public.ts';
