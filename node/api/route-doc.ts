import type { ErrorCode } from '../core/errors.js'
import type { QueryFields } from '../services.js'

/**
 * A JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1) as the API description carries it. `$ref`s name the
 * document's components (`#/components/schemas/<Name>`, see openapi/schemas.ts `ref`).
 */
export type JsonSchema = boolean | { readonly [keyword: string]: JsonSchemaValue }
type JsonSchemaValue = string | number | boolean | null | readonly JsonSchemaValue[] | { readonly [key: string]: JsonSchemaValue }

/**
 * The groups the interactive page lists operations under: FireFly's resources of the messaging API, the test
 * controls, and the API description itself.
 */
export const API_TAGS = [
  'Status',
  'Namespaces',
  'Messages',
  'Data',
  'Datatypes',
  'Batches',
  'Groups',
  'Events',
  'Subscriptions',
  'Network',
  'Identities',
  'Verifiers',
  'Transactions',
  'Operations',
  'Blockchain events',
  'Test controls',
  'API description',
] as const

export type ApiTag = (typeof API_TAGS)[number]

/** A path or query parameter. Without a schema it is a string. */
export interface ParamDoc {
  readonly description: string
  readonly schema?: JsonSchema
  /** A query parameter the route cannot do without (path parameters always are). */
  readonly required?: boolean
}

/** One answer of a route. Without `schema` the answer has no body (204) or a body of no fixed shape. */
export interface ResponseDoc {
  readonly description: string
  readonly schema?: JsonSchema
  /** The media type of the body; JSON unless given. */
  readonly type?: string
  /** Response headers the route sets, by name. */
  readonly headers?: Readonly<Record<string, ParamDoc>>
}

/** The success answers by status; the error answers come from `errors`. */
export type SuccessResponses = { readonly [status in 200 | 201 | 202 | 204 | 301]?: ResponseDoc }

/** A request body: JSON, a multipart form, or either (`POST /data`). */
export type BodyDoc = { readonly description?: string } & ({ readonly json: JsonSchema; readonly multipart?: JsonSchema } | { readonly multipart: JsonSchema; readonly json?: JsonSchema })

/** The names of a path's parameters: `'id' | 'name'` for `/x/:id/y/:name`, `never` for a path without any. */
export type PathParams<P extends string> = P extends `${string}:${infer Param}/${infer Rest}` ? Param | PathParams<`/${Rest}`> : P extends `${string}:${infer Param}` ? Param : never

/** What every route says of itself, whatever its path. */
export interface RouteDocCommon {
  /** One line: what the route does, as the page lists it. */
  readonly summary: string
  /** What one line cannot say (Markdown). */
  readonly description?: string
  readonly tag: ApiTag
  /**
   * FireFly's operationId for the route where FireFly has it (its default-namespace form, e.g. `getMsgs`), a name
   * in its style otherwise. The namespaced form is documented as `<id>Namespace`, as FireFly's document does.
   */
  readonly operationId: string
  /** Query parameters the route reads itself, by name. */
  readonly query?: Readonly<Record<string, ParamDoc>>
  /** The collection's `limit` and `skip` (node/api/query.ts parsePaging). */
  readonly paging?: boolean
  /** The fields a collection filters on (FireFly's filter syntax, node/api/filters.ts), as the data layer maps them. */
  readonly filters?: QueryFields
  readonly body?: BodyDoc
  readonly responses: SuccessResponses
  /**
   * What the route refuses with, from the closed set of node/core/errors.ts (each becomes its HTTP status, with
   * the `{"error": string}` body). What any route can answer (a namespace that is no name, a URL over the limit,
   * a server error) is added to every route, and need not be listed.
   */
  readonly errors: readonly ErrorCode[]
}

/**
 * A route's description, checked against its path: a path with parameters must describe each of them (and only
 * them), a path without any must not have `params`.
 */
export type RouteDoc<P extends string> = RouteDocCommon &
  ([PathParams<P>] extends [never] ? { readonly params?: undefined } : { readonly params: { readonly [K in PathParams<P>]: ParamDoc } })

/** A route's description once registered, whatever its path. */
export type AnyRouteDoc = RouteDocCommon & { readonly params?: Readonly<Record<string, ParamDoc>> }

/**
 * How a served path relates to its route: the namespaced form (`/api/v1/namespaces/{ns}/...`), the default
 * namespace's shortcut (`/api/v1/...`), the form without `/api/v1` (`/namespaces/{ns}/...`), or a path of its
 * own outside namespaces (the admin routes, the API description).
 */
export type RouteForm = 'namespaced' | 'default' | 'unprefixed' | 'global'
