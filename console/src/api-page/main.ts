import { SwaggerUIBundle } from './swagger-ui'

/**
 * The API page (`/api`): Swagger UI over this member's API description. The script is a file of the build, not
 * inline, so the page runs under the console's content-security policy; "Try it out" calls this same member.
 */
const root = document.getElementById('swagger-ui')
if (root) {
  root.textContent = ''
  SwaggerUIBundle({
    url: '/api/openapi.json',
    domNode: root,
    deepLinking: true,
    // No badge asking a public validator about this document: the page talks to this member only.
    validatorUrl: null,
  })
}
