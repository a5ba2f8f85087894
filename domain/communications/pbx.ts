import type { EntityManager } from '@mikro-orm/postgresql';
import { conflict, notFound, validationFailed } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { scopeColumns, type Scope } from '../scope.ts';
import { Pbx, PbxExtension, type ExtensionStatus } from './entities.ts';
import type { PbxExtensionView, PbxView } from './schemas.ts';
import { isUniqueViolation } from '../../db/errors.ts';

export function extensionView(e: PbxExtension): PbxExtensionView {
  return {
    id: e.id, object: 'pbx_extension', pbx_id: e.pbxId, extension: e.extension, user_id: e.userId ?? null, status: e.status,
    forwarding: { enabled: e.forwardingEnabled, destination: e.forwardingDestination ?? null },
    voicemail: { enabled: e.voicemailEnabled, greeting: e.voicemailGreeting ?? null },
    created_at: e.createdAt.toISOString(), updated_at: e.updatedAt.toISOString(),
  };
}

async function pbxView(em: EntityManager, p: Pbx): Promise<PbxView> {
  return {
    id: p.id, object: 'pbx', livemode: p.livemode, name: p.name, extension_count: await em.count(PbxExtension, { pbxId: p.id }),
    metadata: p.metadata, created_at: p.createdAt.toISOString(),
  };
}

export async function createPbx(em: EntityManager, scope: Scope, input: { name: string; metadata: Record<string, string> }): Promise<PbxView> {
  const p = em.create(Pbx, { id: newId('pbx'), ...scopeColumns(scope), name: input.name, metadata: input.metadata });
  await em.flush();
  return pbxView(em, p);
}

async function findPbx(em: EntityManager, id: string): Promise<Pbx> {
  const p = await em.findOne(Pbx, { id });
  if (!p) throw notFound('PBX', id);
  return p;
}

export async function getPbx(em: EntityManager, id: string): Promise<PbxView> {
  return pbxView(em, await findPbx(em, id));
}

export interface ExtensionInput {
  extension: string;
  userId: string | null;
  status: ExtensionStatus;
  forwarding: { enabled: boolean; destination: string | null };
  voicemail: { enabled: boolean; greeting: string | null };
}

function checkForwarding(f: { enabled: boolean; destination: string | null }): void {
  if (f.enabled && !f.destination) {
    throw validationFailed([{ path: 'forwarding.destination', message: 'forwarding is enabled: give the E.164 destination to forward to' }]);
  }
}

const duplicate = (pbxId: string, extension: string) => conflict(
  'extension_taken', `Extension ${extension} already exists in PBX ${pbxId}.`,
  'Choose another extension number, or update the existing one (PATCH …/extensions/{extension_id}).', { extension },
);

export async function createExtension(em: EntityManager, scope: Scope, pbxId: string, input: ExtensionInput): Promise<PbxExtensionView> {
  await findPbx(em, pbxId);
  checkForwarding(input.forwarding);
  if (await em.findOne(PbxExtension, { pbxId, extension: input.extension })) throw duplicate(pbxId, input.extension);
  const e = em.create(PbxExtension, {
    id: newId('pbxExtension'), ...scopeColumns(scope), pbxId, extension: input.extension, userId: input.userId, status: input.status,
    forwardingEnabled: input.forwarding.enabled, forwardingDestination: input.forwarding.destination,
    voicemailEnabled: input.voicemail.enabled, voicemailGreeting: input.voicemail.greeting,
  });
  try {
    await em.flush();
  } catch (err) {
    if (isUniqueViolation(err)) throw duplicate(pbxId, input.extension);
    throw err;
  }
  return extensionView(e);
}

async function findExtension(em: EntityManager, pbxId: string, extensionId: string): Promise<PbxExtension> {
  await findPbx(em, pbxId);
  const e = await em.findOne(PbxExtension, { id: extensionId, pbxId });
  if (!e) throw notFound('PBX extension', extensionId);
  return e;
}

export async function getExtension(em: EntityManager, pbxId: string, extensionId: string): Promise<PbxExtensionView> {
  return extensionView(await findExtension(em, pbxId, extensionId));
}

export async function updateExtension(
  em: EntityManager, pbxId: string, extensionId: string, patch: Partial<Omit<ExtensionInput, 'forwarding' | 'voicemail'>> & {
    forwarding?: { enabled?: boolean; destination?: string | null };
    voicemail?: { enabled?: boolean; greeting?: string | null };
  },
): Promise<PbxExtensionView> {
  const e = await findExtension(em, pbxId, extensionId);
  if (patch.extension !== undefined && patch.extension !== e.extension) {
    if (await em.findOne(PbxExtension, { pbxId, extension: patch.extension })) throw duplicate(pbxId, patch.extension);
    e.extension = patch.extension;
  }
  if (patch.userId !== undefined) e.userId = patch.userId;
  if (patch.status !== undefined) e.status = patch.status;
  if (patch.forwarding) {
    if (patch.forwarding.enabled !== undefined) e.forwardingEnabled = patch.forwarding.enabled;
    if (patch.forwarding.destination !== undefined) e.forwardingDestination = patch.forwarding.destination;
  }
  if (patch.voicemail) {
    if (patch.voicemail.enabled !== undefined) e.voicemailEnabled = patch.voicemail.enabled;
    if (patch.voicemail.greeting !== undefined) e.voicemailGreeting = patch.voicemail.greeting;
  }
  checkForwarding({ enabled: e.forwardingEnabled, destination: e.forwardingDestination ?? null });
  e.updatedAt = new Date();
  try {
    await em.flush();
  } catch (err) {
    if (isUniqueViolation(err)) throw duplicate(pbxId, e.extension);
    throw err;
  }
  return extensionView(e);
}

export async function deleteExtension(em: EntityManager, pbxId: string, extensionId: string): Promise<void> {
  const e = await findExtension(em, pbxId, extensionId);
  em.remove(e);
  await em.flush();
}

/**
 * The PBX extension listing: extensions in extension-number order, `total_count` of the PBX (or of
 * the filter), paginated by an opaque cursor (the last extension number of the page).
 */
export async function listExtensions(
  em: EntityManager, pbxId: string, q: { limit: number; after: string | null; status?: ExtensionStatus },
): Promise<{ extensions: PbxExtensionView[]; total_count: number; has_more: boolean; last: string | null }> {
  const pbx = await findPbx(em, pbxId);
  const base: Record<string, unknown> = { pbxId, ...(q.status ? { status: q.status } : {}) };
  // Extension numbers of different lengths sort as numbers ("999" before "1000").
  const ids = await em.getConnection().execute<{ id: string }[]>(
    `select id from comm_pbx_extensions
      where pbx_id = ? and account_id = ? and livemode = ? and (?::text is null or status = ?)
        and (?::text is null or (length(extension), extension) > (length(?::text), ?::text))
      order by length(extension), extension limit ?`,
    [pbxId, pbx.accountId, pbx.livemode, q.status ?? null, q.status ?? null, q.after, q.after, q.after, q.limit + 1],
  );
  const rows = ids.length ? await em.find(PbxExtension, { id: { $in: ids.map((r) => r.id) } }) : [];
  const byId = new Map(rows.map((r) => [r.id, r]));
  const ordered = ids.map((r) => byId.get(r.id)!).filter(Boolean);
  const page = ordered.slice(0, q.limit);
  return {
    extensions: page.map(extensionView),
    total_count: await em.count(PbxExtension, base),
    has_more: ordered.length > q.limit,
    last: page.at(-1)?.extension ?? null,
  };
}
