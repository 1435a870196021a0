/* test_shim_rtld_local.c: libshim_rtld_local.so, only in the local scope of
 * libshim_rtld_user.so (which test_shim_rtld dlopens RTLD_LOCAL). Defines a
 * cu-prefixed function, the kind of name the shim's dlsym looks at. */
int cuShimLocalProbe(void);
int cuShimLocalProbe(void) { return 7; }
