import { describe, expect, it } from 'vitest';
import { adminRouter } from '../../api/admin/router.ts';
import { createCallerFactory, createContextInner } from '../../api/admin/trpc.ts';
import { permissionScopes } from '../../domain/registry.ts';
import { ruleSql, type SegmentRuleGroup } from '../../domain/crm/segment-rules.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { create, eventually } from '../commerce/support.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;
usePlatform({ worker: true, ownAccount: true }, (t) => ({ platform, http, key, accountId } = t));

const tag = () => Math.random().toString(36).slice(2, 8);
const customer = (body: Record<string, unknown>) => create(http, key, '/v3/customers', { email: `s-${tag()}@example.com`, name: 'Seg', ...body });
const members = async (segmentId: string, query = 'limit=100') => {
  const res = await http(`/v3/segments/${segmentId}/customers?${query}`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body;
};
const memberIds = async (segmentId: string) => (await members(segmentId)).data.map((c: { id: string }) => c.id).sort();
const events = (type: string, segmentId: string) => platform.sql<{ customer_id: string; data: any }>(
  `select customer_id, data from events where type = $1 and data->'object'->>'segment_id' = $2 order by id`, [type, segmentId]);

describe('segment rules', () => {
  it('compile to one parameterised predicate (no value in the SQL text)', () => {
    const rules: SegmentRuleGroup = {
      match: 'all',
      conditions: [
        { field: 'customer_type', operator: 'eq', value: "b2b'; drop table customers; --" },
        { match: 'any', conditions: [{ field: 'segments', operator: 'contains', value: 'vip' }, { field: 'last_order_date', operator: 'within_last_days', value: 30 }] },
      ],
    };
    const sql = ruleSql(rules, new Date('2026-01-01T00:00:00Z'));
    expect(sql.text).not.toContain('drop table');
    expect(sql.text).toMatch(/^\(\(c\.customer_type = \?\) and \(\(\? = any\(c\.segments\)\) or/);
    expect(sql.params).toEqual(["b2b'; drop table customers; --", 'vip', '2026-01-01T00:00:00.000Z', 30]);
  });

  it('refuses bad rules with 422 naming every field', async () => {
    const res = await http('/v3/segments', {
      key,
      body: {
        name: 'Bad',
        rules: {
          match: 'some',
          conditions: [
            { field: 'total_ltv', operator: 'contains', value: 5 },
            { field: 'country', operator: 'in', value: ['Germany'] },
            { field: 'shoe_size', operator: 'eq', value: 42 },
            { field: 'last_order_date', operator: 'gt', value: '2025-02-30' },
          ],
        },
      },
    });
    expect(res.status, res.text).toBe(422);
    expect(res.body.errors.map((e: { path: string }) => e.path).sort()).toEqual([
      'rules.conditions.0.operator', 'rules.conditions.1.value', 'rules.conditions.2', 'rules.conditions.3.value', 'rules.match',
    ]);
    const deep = { match: 'all', conditions: [{ match: 'all', conditions: [{ match: 'all', conditions: [{ match: 'all', conditions: [{ field: 'segments', operator: 'exists' }] }] }] }] };
    const tooDeep = await http('/v3/segments', { key, body: { name: 'Deep', rules: deep } });
    expect(tooDeep.status).toBe(422);
    expect(tooDeep.body.errors[0].path).toBe('rules.conditions.0.conditions.0.conditions.0');
    expect((await http('/v3/segments/seg_nope', { key })).status).toBe(404);
  });
});

describe('segments', () => {
  it('evaluates at once in SQL, pages members, records entered events, and follows customer changes through events', async () => {
    const vip = tag();
    const a = await customer({ customer_type: 'b2b', segments: [vip], custom_fields: { country: 'DE' } });
    const b = await customer({ customer_type: 'b2c', segments: [vip], custom_fields: { country: 'DE' } });
    const c = await customer({ customer_type: 'b2b', custom_fields: { country: 'FR' } });
    const d = await customer({ customer_type: 'b2b', custom_fields: { country: 'at' } });

    const body = {
      name: 'DACH or VIP business', description: 'b2b in DE/AT, or tagged',
      rules: { match: 'all', conditions: [
        { field: 'customer_type', operator: 'eq', value: 'b2b' },
        { match: 'any', conditions: [{ field: 'country', operator: 'in', value: ['DE', 'AT'] }, { field: 'segments', operator: 'contains', value: vip }] },
      ] },
    };
    const created = await http('/v3/segments', { key, headers: { 'idempotency-key': `seg-${vip}` }, body });
    expect(created.status, created.text).toBe(201);
    const seg = created.body;
    expect(seg).toMatchObject({ object: 'segment', status: 'active', member_count: 2, schedule_id: `segment-nightly-${seg.id}` });
    expect(seg.id).toMatch(/^seg_/);
    expect(seg.last_evaluated_at).not.toBeNull();
    const replay = await http('/v3/segments', { key, headers: { 'idempotency-key': `seg-${vip}` }, body });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.id).toBe(seg.id);

    expect(await memberIds(seg.id)).toEqual([a.id, d.id].sort());
    const page1 = await members(seg.id, 'limit=1&sort=created_at');
    expect(page1).toMatchObject({ has_more: true, data: [{ id: [a.id, d.id].sort()[0] }] });
    const page2 = await members(seg.id, `limit=1&sort=created_at&cursor=${page1.next_cursor}`);
    expect(page2).toMatchObject({ has_more: false, data: [{ id: [a.id, d.id].sort()[1] }] });
    expect((await events('customer.segment.entered', seg.id)).map((e) => e.customer_id).sort()).toEqual([a.id, d.id].sort());
    expect((await events('customer.segment.entered', seg.id))[0]!.data.object).toMatchObject({
      object: 'segment_membership', segment_id: seg.id, segment_name: 'DACH or VIP business', change: 'entered',
    });

    // c gets the tag (customer.updated → the consumer's workflow): it enters; a loses type b2b: it leaves; b stays out.
    expect((await http(`/v3/customers/${c.id}`, { key, method: 'PATCH', body: { segments: [vip] } })).status).toBe(200);
    expect((await http(`/v3/customers/${a.id}`, { key, method: 'PATCH', body: { customer_type: 'b2c' } })).status).toBe(200);
    await eventually(async () => JSON.stringify(await memberIds(seg.id)) === JSON.stringify([c.id, d.id].sort()), 20_000, 'c in, a out');
    const left = await eventually(async () => (await events('customer.segment.left', seg.id)).length === 1 && events('customer.segment.left', seg.id), 10_000, 'left event');
    expect(left[0]!.customer_id).toBe(a.id);
    expect((await http(`/v3/segments/${seg.id}`, { key })).body.member_count).toBe(2);
    // The workflow of one refresh, found by its deterministic id.
    const [updated] = await platform.sql<{ id: string }>(`select id from events where type = 'customer.updated' and customer_id = $1 order by id desc limit 1`, [c.id]);
    const described = await platform.temporal.client.workflow.getHandle(`segment-membership-${c.id}-${updated!.id}`).describe();
    expect(described.searchAttributes).toMatchObject({ BpCustomerId: [c.id] });

    // New rules re-evaluate at once (b2c now): a and b match.
    const patched = await http(`/v3/segments/${seg.id}`, {
      key, method: 'PATCH',
      body: { rules: { match: 'all', conditions: [{ field: 'customer_type', operator: 'eq', value: 'b2c' }, { field: 'segments', operator: 'contains', value: vip }] } },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ member_count: 2, evaluation_workflow_id: `segment-evaluation-${seg.id}-v2` });
    expect(await memberIds(seg.id)).toEqual([a.id, b.id].sort());
    const [ab] = await platform.sql<{ n: number }>(`select count(*)::int as n from events where type = 'customer.segment.left' and data->'object'->>'segment_id' = $1`, [seg.id]);
    expect(ab!.n).toBe(3); // a (earlier), c and d

    // Archived: schedule gone, members cleared, no more changes.
    const archived = await http(`/v3/segments/${seg.id}/archive`, { key, method: 'POST', body: {} });
    expect(archived.body).toMatchObject({ status: 'archived', member_count: 0, schedule_id: null });
    await expect(platform.temporal.client.schedule.getHandle(`segment-nightly-${seg.id}`).describe()).rejects.toThrow();
    const again = await http(`/v3/segments/${seg.id}`, { key, method: 'PATCH', body: { name: 'x' } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'archived' });
    expect((await http('/v3/segments?status=archived', { key })).body.data.map((s: { id: string }) => s.id)).toContain(seg.id);
  });

  it('uses journey metrics, refreshed on events and nightly by the schedule, and triggers CRM automation', async () => {
    const marker = tag();
    const rule = await create(http, key, '/v3/crm/tasks/automation', {
      name: 'Welcome engaged customers', trigger: { event: 'customer.segment.entered' },
      conditions: [{ field: 'segment_name', operator: 'eq', value: `Engaged ${marker}` }],
      actions: [{ type: 'create_task', title: 'Call {{customer.name}}: entered {{object.segment_name}}' }],
    });
    const quiet = await customer({ name: 'Quiet' });
    const chatty = await customer({ name: 'Chatty' });
    const seg = await create(http, key, '/v3/segments', {
      name: `Engaged ${marker}`,
      rules: { match: 'any', conditions: [{ field: 'engagement_score', operator: 'gte', value: 10 }, { field: 'lifecycle_stage', operator: 'eq', value: 'opportunity' }] },
    });
    expect(seg.member_count).toBe(0);
    const snap = await platform.sql(`select lifecycle_stage from crm_customer_metrics where customer_id = any($1)`, [[quiet.id, chatty.id]]);
    expect(snap).toHaveLength(2); // the first evaluation backfilled the snapshots

    // An inbound call and a meeting (customer.updated, metrics refreshed): score 8×1.5 + 12 = 24 ≥ 10.
    for (const type of ['call', 'meeting']) {
      const r = await http(`/v3/customers/${chatty.id}/interactions`, { key, body: { type, direction: 'inbound' } });
      expect(r.status, r.text).toBe(201);
    }
    await eventually(async () => (await memberIds(seg.id)).includes(chatty.id), 20_000, 'chatty enters');
    const task = await eventually(async () => (await http(`/v3/crm/tasks?rule_id=${rule.id}`, { key })).body.data[0], 20_000, 'automation task');
    expect(task).toMatchObject({ customer_id: chatty.id, title: `Call Chatty: entered Engaged ${marker}` });

    // A change no event announced (a touchpoint written straight to the table), seen by the nightly run.
    await platform.sql(
      `insert into customer_interactions (id, account_id, livemode, customer_id, type, direction, occurred_at, metadata, created_at)
       select 'int_nightly_' || $2, account_id, livemode, id, 'meeting', 'outbound', now(), '{}', now() from customers where id = $1`, [quiet.id, marker]);
    await platform.sql(`update crm_customer_metrics set refreshed_at = now() - interval '2 days' where customer_id = $1`, [quiet.id]);
    const schedule = platform.temporal.client.schedule.getHandle(`segment-nightly-${seg.id}`);
    const description = await schedule.describe();
    expect(description.spec.calendars?.[0]).toMatchObject({ hour: [{ start: 3, end: 3, step: 1 }] });
    await schedule.trigger();
    await eventually(async () => (await memberIds(seg.id)).includes(quiet.id), 20_000, 'quiet enters at the nightly run');
    expect(await memberIds(seg.id)).toEqual([chatty.id, quiet.id].sort());
  });
});

describe('segments admin (tRPC)', () => {
  it('describes a segment, evaluates it on an operator\'s request and pauses its schedule, recording who and why', async () => {
    const token = 'segments-admin-token-0123456789';
    const caller = createCallerFactory(adminRouter)(createContextInner({ orm: platform.orm, permissionScopes, temporal: platform.temporal, adminToken: token, presentedToken: token }));
    const seg = await create(http, key, '/v3/segments', { name: 'Admin', rules: { match: 'all', conditions: [{ field: 'segments', operator: 'contains', value: `adm-${tag()}` }] } });
    const ref = { accountId, livemode: false, segmentId: seg.id };
    const described = await caller.crm.describeSegment(ref);
    expect(described).toMatchObject({ segment: { id: seg.id }, schedule: { paused: false }, evaluation: { status: 'COMPLETED' } });
    expect(described.schedule!.next_runs.length).toBeGreaterThan(0);

    const who = { operator: 'ops@example.com', reason: 'tags were bulk-imported' };
    const run = await caller.crm.evaluateSegment({ ...ref, ...who });
    expect(run).toMatchObject({ workflow_id: expect.stringMatching(`^segment-evaluation-${seg.id}-admin-`), entered: 0, left: 0, members: 0 });
    expect((await platform.temporal.client.workflow.getHandle(run.workflow_id).describe()).memo).toEqual(who);
    const paused = await caller.crm.pauseSegmentSchedule({ ...ref, ...who, paused: true });
    expect(paused).toEqual({ schedule_id: `segment-nightly-${seg.id}`, paused: true, note: 'ops@example.com: tags were bulk-imported' });
    expect((await caller.crm.describeSegment(ref)).schedule!.paused).toBe(true);
    await expect(caller.crm.describeSegment({ ...ref, accountId: 'acct_other' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
