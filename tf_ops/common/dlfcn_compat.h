// <dlfcn.h>, bound to the symbol versions every glibc since 2.2.5 has. dlopen, dlsym, dlerror
// and dladdr moved into libc with new versions (GLIBC_2.34) in glibc 2.34; a library that
// referenced those would not load on older systems and would lose its manylinux tag
// (docs/packaging.md). Include this instead of <dlfcn.h> in every file that calls them.
#ifndef TF_ONTHEFLY_COMMON_DLFCN_COMPAT_H_
#define TF_ONTHEFLY_COMMON_DLFCN_COMPAT_H_

#include <dlfcn.h>

__asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
__asm__(".symver dlerror,dlerror@GLIBC_2.2.5");
__asm__(".symver dladdr,dladdr@GLIBC_2.2.5");

#endif  // TF_ONTHEFLY_COMMON_DLFCN_COMPAT_H_
