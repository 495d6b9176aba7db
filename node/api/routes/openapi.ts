import { stringify } from 'yaml'
import type { ApiRouter } from '../router.js'
import { openApiDocument } from '../openapi/document.js'
import { VERSION } from '../../services.js'

/** Where the API description is served: Parley's own path, and FireFly's two. */
export const OPENAPI_PATHS = { json: '/api/openapi.json', swaggerJson: '/api/swagger.json', swaggerYaml: '/api/swagger.yaml' } as const

const DOCUMENT = { 200: { description: "The OpenAPI 3.1 description of this member's API", schema: { type: 'object' } } } as const

/**
 * The API description of the router's own routes (these three included), as JSON and YAML. Made at the first request,
 * when every route is registered, and kept: the routes of a running server do not change.
 */
export function openApiRoutes<S>(r: ApiRouter<S>): void {
  let json: string | undefined
  let yaml: string | undefined
  const document = () => openApiDocument(r.documented(), VERSION)
  const sendJson = (ctx: { type: string; body: unknown }): void => {
    ctx.type = 'application/json; charset=utf-8'
    ctx.body = json ??= JSON.stringify(document())
  }
  r.at('get', OPENAPI_PATHS.json, { summary: 'The API description, as JSON', tag: 'API description', operationId: 'getOpenApiJson', responses: DOCUMENT, errors: [] }, sendJson)
  r.at('get', OPENAPI_PATHS.swaggerJson, { summary: "The API description, as JSON, at FireFly's path", tag: 'API description', operationId: 'getSwaggerJson', responses: DOCUMENT, errors: [] }, sendJson)
  r.at(
    'get',
    OPENAPI_PATHS.swaggerYaml,
    {
      summary: "The API description, as YAML, at FireFly's path",
      tag: 'API description',
      operationId: 'getSwaggerYaml',
      responses: { 200: { ...DOCUMENT[200], type: 'application/yaml' } },
      errors: [],
    },
    (ctx) => {
      ctx.type = 'application/yaml; charset=utf-8'
      // Anchors and aliases would fold the shared parameter and schema objects into references many YAML readers refuse.
      ctx.body = yaml ??= stringify(document(), { aliasDuplicateObjects: false })
    },
  )
}
