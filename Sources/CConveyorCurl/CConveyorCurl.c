#include "CConveyorCurl.h"

// libcurl declares CURLcode and CURLMcode as enums, which are `int` on every platform it
// supports; `curl_off_t` is a 64-bit signed integer on every 64-bit platform.
typedef int (*conveyor_variadic_call)(void *handle, int option, ...);

int conveyor_curl_setopt_long(void *function, void *handle, int option, long value) {
    return ((conveyor_variadic_call)function)(handle, option, value);
}

int conveyor_curl_setopt_pointer(void *function, void *handle, int option, const void *value) {
    return ((conveyor_variadic_call)function)(handle, option, value);
}

int conveyor_curl_setopt_off_t(void *function, void *handle, int option, int64_t value) {
    return ((conveyor_variadic_call)function)(handle, option, value);
}

int conveyor_curl_setopt_function(void *function, void *handle, int option, void (*value)(void)) {
    return ((conveyor_variadic_call)function)(handle, option, value);
}

int conveyor_curl_getinfo_long(void *function, void *handle, int info, long *value) {
    return ((conveyor_variadic_call)function)(handle, info, value);
}

int conveyor_curl_getinfo_off_t(void *function, void *handle, int info, int64_t *value) {
    return ((conveyor_variadic_call)function)(handle, info, value);
}

int conveyor_curl_getinfo_pointer(void *function, void *handle, int info, const char **value) {
    return ((conveyor_variadic_call)function)(handle, info, value);
}
