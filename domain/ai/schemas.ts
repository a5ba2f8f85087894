import { z } from 'zod';

/** Longest question or message accepted (characters): a question, not a document. */
export const MAX_QUESTION = 2000;

const question = (what: string) => z.string()
  .trim()
  .min(1, `${what} must not be empty`)
  .max(MAX_QUESTION, `${what} is at most ${MAX_QUESTION} characters; ask a shorter question`);

export const askBodySchema = z.strictObject({ question: question('question') }).meta({ id: 'AiAskRequest' });

export const replyDraftBodySchema = z.strictObject({
  interaction_id: z.string().max(64).optional().meta({ description: 'The interaction to answer (its customer is read from it).' }),
  customer_id: z.string().max(64).optional().meta({ description: 'With `message`: the customer who wrote it.' }),
  message: question('message').optional().meta({ description: 'With `customer_id`: the message to answer.' }),
}).meta({ id: 'AiReplyDraftRequest', description: 'Either `interaction_id`, or `customer_id` with `message`.' });

const citationSchema = z.object({
  id: z.string(),
  object: z.string().meta({ description: 'The kind of record (customer, order, invoice, …), from its id prefix.' }),
  tool: z.string().meta({ description: 'The read-only tool (or context source) the record came from.' }),
  mentioned: z.boolean().meta({ description: 'Whether the answer text names this id.' }),
}).meta({ id: 'AiCitation' });

const usageSchema = z.object({ input_tokens: z.int(), output_tokens: z.int(), total_tokens: z.int() });

export const aiAnswerSchema = z.object({
  id: z.string().meta({ description: 'The call (aic_…), as recorded for the usage meter.' }),
  object: z.literal('ai_answer'),
  livemode: z.boolean(),
  answer: z.string(),
  citations: z.array(citationSchema).meta({ description: 'Every record the tools returned, with whether the answer names it.' }),
  tools_used: z.array(z.string()),
  tools_offered: z.array(z.string()).meta({ description: 'The read-only tools the key\'s permissions allowed.' }),
  usage: usageSchema,
}).meta({ id: 'AiAnswer' });

/** What the model must produce for a customer summary (validated before it is answered). */
export const summaryOutputSchema = z.object({
  headline: z.string().describe('One sentence: who the customer is and where they stand.'),
  summary: z.string().describe('A short paragraph for an account manager.'),
  sentiment: z.enum(['positive', 'neutral', 'negative', 'unknown']),
  churn_risk: z.enum(['low', 'medium', 'high', 'unknown']),
  highlights: z.array(z.string()).describe('Facts worth knowing, each citing record ids in brackets.'),
  next_best_action: z.string(),
});

export const customerSummarySchema = z.object({
  id: z.string(),
  object: z.literal('ai_customer_summary'),
  livemode: z.boolean(),
  customer_id: z.string(),
  summary: summaryOutputSchema,
  sources: z.array(z.string()).meta({ description: 'The data the summary was made from (those the key may read).' }),
  citations: z.array(citationSchema),
  usage: usageSchema,
}).meta({ id: 'AiCustomerSummary' });

/** What the model must produce for a reply draft. */
export const replyOutputSchema = z.object({
  subject: z.string(),
  body: z.string().describe('The reply, ready for an agent to review and send.'),
  tone: z.enum(['friendly', 'neutral', 'apologetic', 'firm']),
  referenced_order_ids: z.array(z.string()).describe('Ids of the open orders the reply mentions (only ids from the context).'),
  needs_human_review: z.boolean().describe('True when the reply promises something (a refund, a date) or the request is unclear.'),
});

export const replyDraftSchema = z.object({
  id: z.string(),
  object: z.literal('ai_reply_draft'),
  livemode: z.boolean(),
  customer_id: z.string(),
  interaction_id: z.string().nullable(),
  draft: replyOutputSchema,
  sources: z.array(z.string()),
  citations: z.array(citationSchema),
  usage: usageSchema,
}).meta({ id: 'AiReplyDraft' });

export const aiUsageSchema = z.object({
  object: z.literal('ai_usage'),
  livemode: z.boolean(),
  period_start: z.string().meta({ format: 'date-time' }),
  period_end: z.string().meta({ format: 'date-time', description: 'When the budget resets (the next month, UTC).' }),
  calls: z.int(),
  input_tokens: z.int(),
  output_tokens: z.int(),
  total_tokens: z.int(),
  budget_tokens: z.int(),
  remaining_tokens: z.int(),
}).meta({ id: 'AiUsage' });

export type AiAnswer = z.output<typeof aiAnswerSchema>;
export type AiCitation = z.output<typeof citationSchema>;
export type CustomerSummaryView = z.output<typeof customerSummarySchema>;
export type ReplyDraftView = z.output<typeof replyDraftSchema>;
export type AiUsageView = z.output<typeof aiUsageSchema>;
export type TokenUsage = z.output<typeof usageSchema>;
