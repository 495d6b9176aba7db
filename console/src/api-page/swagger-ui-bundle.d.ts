declare module 'swagger-ui-dist/swagger-ui-bundle.js' {
  const bundle: unknown
  export default bundle
}
