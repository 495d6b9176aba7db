import type { ApiRouter, Handler } from '../router.js'
import type { NodeServices } from '../../services.js'
import { readJsonBody, sendJson } from '../body.js'
import { boolParam, parsePaging } from '../query.js'
import { parseFilter } from '../filters.js'
import { presentDatatype, presentMessage } from '../present.js'
import { ParleyError } from '../../core/errors.js'
import { parseDatatypeRequest } from '../../definitions/define-datatype.js'
import { checkDatatypeName, checkDatatypeVersion } from '../../data/datatype.js'
import { DATATYPE_FIELDS } from '../../services.js'
import { listOf, ref } from '../openapi/schemas.js'
import { CONFIRM, sendResponses } from '../openapi/params.js'

/**
 * Datatypes: define one (a broadcast definition; it exists once confirmed) and look them up. The spec lists
 * both `broadcast/datatype` and FireFly's `datatypes` for defining; they are one handler.
 */
export function datatypeRoutes(r: ApiRouter<NodeServices>): void {
  const define: Handler<NodeServices> = async (ctx, s, ns, q) => {
    const req = parseDatatypeRequest(await readJsonBody(ctx))
    const confirm = boolParam(q, 'confirm') ?? false
    const m = await s.datatypeDefiner.define(ns, req, { confirm })
    sendJson(ctx, confirm ? 200 : 202, presentMessage(m, { topicAlias: true }))
  }
  const defineDoc = {
    summary: 'Define a datatype: a JSON Schema that data values can be validated against',
    description: 'A definition broadcast to every member; the datatype exists once its message is confirmed. The answer is that message.',
    tag: 'Datatypes',
    operationId: 'postNewDatatype',
    query: { confirm: CONFIRM },
    body: { json: ref('DatatypeInput') },
    responses: sendResponses('Message', 'definition message'),
    errors: ['INVALID_JSON', 'INVALID_FIELD', 'SCHEMA_VALIDATION_FAILED', 'CONFLICT', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'MESSAGE_REJECTED', 'CONFIRM_TIMEOUT', 'UNAVAILABLE', 'STORAGE_FULL', 'TOO_MANY_REQUESTS', 'REQUEST_TIMEOUT'],
  } as const
  r.post('/broadcast/datatype', { ...defineDoc, summary: 'Define a datatype (the same as POST datatypes)', operationId: 'postBroadcastDatatype' }, define)
  r.post('/datatypes', defineDoc, define)

  r.get(
    '/datatypes',
    {
      summary: 'List the datatypes defined, newest first',
      tag: 'Datatypes',
      operationId: 'getDatatypes',
      paging: true,
      filters: DATATYPE_FIELDS,
      responses: { 200: { description: 'The datatypes', schema: listOf('Datatype') } },
      errors: ['INVALID_FIELD', 'INVALID_FILTER'],
    },
    (ctx, s, ns, q) => {
      const paging = parsePaging(q)
      const filter = parseFilter(q)
      sendJson(ctx, 200, s.query.datatypes.list(ns, { ...(filter ? { filter } : {}), ...paging }).map(presentDatatype))
    },
  )

  r.get(
    '/datatypes/:name/:version',
    {
      summary: 'A datatype by name and version',
      tag: 'Datatypes',
      operationId: 'getDatatypeByName',
      params: { name: { description: "The datatype's name" }, version: { description: 'Its version' } },
      responses: { 200: { description: 'The datatype', schema: ref('Datatype') } },
      errors: ['INVALID_FIELD', 'NOT_FOUND'],
    },
    (ctx, s, ns) => {
      const name = ctx.params.name ?? ''
      const version = ctx.params.version ?? ''
      checkDatatypeName(name)
      checkDatatypeVersion(version)
      const d = s.query.datatypes.byNameVersion(ns, name, version)
      if (!d) throw new ParleyError('NOT_FOUND', `datatype ${name}/${version} not found in namespace ${ns}`)
      sendJson(ctx, 200, presentDatatype(d))
    },
  )
}
