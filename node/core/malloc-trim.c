/*
 * A Node-API module with one function, `trim()`: glibc's malloc_trim(0), which gives the system back the pages malloc
 * holds free in every arena, not only at each arena's top. Loaded by node/core/malloc-trim.ts; compiled into each
 * build by network/build-native.ts. Why a member needs it: node/core/malloc-trim.ts.
 */
#include <malloc.h>
#include <node_api.h>

/* Elsewhere (musl, say) malloc_trim may be undeclared, which C compilers before GCC 14 only warn about: no module. */
#ifndef __GLIBC__
#error "malloc_trim is glibc's"
#endif

static napi_value Trim(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value released;
  if (napi_get_boolean(env, malloc_trim(0) == 1, &released) != napi_ok) return NULL;
  return released;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, Trim, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "trim", fn) != napi_ok) return NULL;
  return exports;
}
