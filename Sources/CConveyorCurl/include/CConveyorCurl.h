#ifndef CCONVEYORCURL_H
#define CCONVEYORCURL_H

// Calls into libcurl's variadic functions through correctly typed variadic function pointers.
//
// Swift cannot call a C variadic function through a pointer it got from dlsym, and casting
// such a pointer to a non-variadic type is undefined behaviour (it breaks on ABIs that pass
// variadic arguments differently, such as arm64 Apple platforms). These wrappers take the
// pointer dlsym returned and call it as the variadic function it is, with one argument of
// the type the option expects. No curl header is needed: the handle is opaque and options
// and results are plain integers.

#include <stdint.h>

/// `curl_easy_setopt` or `curl_multi_setopt` with a `long` argument.
int conveyor_curl_setopt_long(void *function, void *handle, int option, long value);
/// `curl_easy_setopt` or `curl_multi_setopt` with a pointer argument (strings, lists, user data).
int conveyor_curl_setopt_pointer(void *function, void *handle, int option, const void *value);
/// `curl_easy_setopt` with a `curl_off_t` (64-bit) argument.
int conveyor_curl_setopt_off_t(void *function, void *handle, int option, int64_t value);
/// `curl_easy_setopt` with a function pointer argument (callbacks).
int conveyor_curl_setopt_function(void *function, void *handle, int option, void (*value)(void));
/// `curl_easy_getinfo` for a `long` result.
int conveyor_curl_getinfo_long(void *function, void *handle, int info, long *value);
/// `curl_easy_getinfo` for a `curl_off_t` result.
int conveyor_curl_getinfo_off_t(void *function, void *handle, int info, int64_t *value);
/// `curl_easy_getinfo` for a pointer result (strings).
int conveyor_curl_getinfo_pointer(void *function, void *handle, int info, const char **value);

#endif
