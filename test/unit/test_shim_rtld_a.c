/* test_shim_rtld_a.c: libshim_rtld_a.so, the "next" definition of
 * shim_rtld_probe for test_shim_rtld (returns 1). */
int shim_rtld_probe(void);
int shim_rtld_probe(void) { return 1; }
