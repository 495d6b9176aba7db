/**
 * Version 17: a list of messages, or of a message's events, reads its page, not every row of the namespace.
 *
 * The list (repos/messages.ts `list`) sorts in the API's natural order, `(confirmed_key IS NULL) DESC,
 * confirmed_key DESC, created_key DESC, seq DESC`, which no index held: every list, filtered or not, read and
 * sorted every message it matched. On PostgreSQL at 200,000 messages an unfiltered page took 1.8 s and a topic's
 * latest 50 0.35 s (1.8 s at 2,000,000).
 *
 * - `messages_natural` is that order itself, after the namespace (it was `(namespace, confirmed_key, created_key)`,
 *   which neither engine could read in that order). A page is its first rows read backwards; a filter on a column
 *   that most messages match (tag, type, state, a `confirmed` range) is checked along the way.
 * - `messages_topics` is the same order per topic list: the `topics` filter compares an expression of the column
 *   (db/query-fields.ts MESSAGE_FIELDS), which it holds exactly as the query writes it. Both engines match an
 *   expression index to a query by the expression, so the two must stay the same (its unit test names the index
 *   in both engines' plans).
 * - `messages_cid` and `messages_group`: the same order per reply target (`cid`, which the SDK lists replies by) and
 *   per private group, holding only the messages that have one. Without them SQLite, which plans without
 *   statistics, would rather read `messages_natural` in order than sort a handful of a group's messages, and go
 *   through the whole namespace to fill a page. (`messages_group_type` stays for the lookups by group and type.)
 * - `events_reference`: a message's events (`messages/{id}/events`) and a batch's transaction events (its trace) are
 *   found by what they refer to, which read every event of the namespace (0.1 s at 200,000 events).
 */
export const v17MessageListIndexes = {
  version: 17,
  name: 'messages in the natural order, per namespace, topic list, reply target and group; events by reference',
  up: `
    DROP INDEX messages_natural;
    CREATE INDEX messages_natural ON messages (namespace, (confirmed_key IS NULL), confirmed_key, created_key, seq);
    CREATE INDEX messages_topics ON messages (namespace, (REPLACE(REPLACE(REPLACE(topics, '["', ''), '"]', ''), '","', ',')), (confirmed_key IS NULL), confirmed_key, created_key, seq);
    CREATE INDEX messages_cid ON messages (namespace, cid, (confirmed_key IS NULL), confirmed_key, created_key, seq) WHERE cid IS NOT NULL;
    CREATE INDEX messages_group ON messages (namespace, grp, (confirmed_key IS NULL), confirmed_key, created_key, seq) WHERE grp IS NOT NULL;
    CREATE INDEX events_reference ON events (reference);
  `,
}
