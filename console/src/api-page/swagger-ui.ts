// swagger-ui-dist ships no type declarations: this is the one call the API page makes, typed as far as it uses it.
import bundle from 'swagger-ui-dist/swagger-ui-bundle.js'

/** The options of Swagger UI the API page sets (https://swagger.io/docs/open-source-tools/swagger-ui/usage/configuration/). */
export interface SwaggerUiOptions {
  url: string
  domNode: HTMLElement
  deepLinking: boolean
  validatorUrl: null
}

export const SwaggerUIBundle = bundle as (opts: SwaggerUiOptions) => unknown
