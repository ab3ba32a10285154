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
//
// The two structs libcurl hands over or takes by pointer are mirrored below from the layout
// libcurl documents as its public ABI (curl_multi_info_read(3), CURLOPT_CAINFO_BLOB(3)), so
// that Swift reads their fields by name and C lays them out, instead of byte offsets in Swift.

#include <stddef.h>
#include <stdint.h>

/// The data of a `conveyor_curl_message`: `union { void *whatever; CURLcode result; }`.
typedef union conveyor_curl_message_data {
    /// Message-specific data (unused by the only message libcurl sends, `CURLMSG_DONE`).
    void *whatever;
    /// The transfer's `CURLcode` (an enum: `int`) for `CURLMSG_DONE`.
    int result;
} conveyor_curl_message_data;

/// libcurl's `CURLMsg`, what `curl_multi_info_read` returns: `{ CURLMSG msg; CURL
/// *easy_handle; union { void *whatever; CURLcode result; } data; }`.
typedef struct conveyor_curl_message {
    /// The `CURLMSG` kind (an enum: `int`); 1 is `CURLMSG_DONE`.
    int msg;
    /// The easy handle the message is about.
    void *easy_handle;
    /// The kind's data: the result for `CURLMSG_DONE`.
    conveyor_curl_message_data data;
} conveyor_curl_message;

/// libcurl's `struct curl_blob` (7.71.0 and later), taken by the `CURLOPT_*_BLOB` options:
/// `{ void *data; size_t len; unsigned int flags; }`.
typedef struct conveyor_curl_blob {
    /// The bytes.
    void *data;
    /// Their count.
    size_t len;
    /// `CURL_BLOB_COPY` (1): libcurl copies the bytes before `curl_easy_setopt` returns.
    unsigned int flags;
} conveyor_curl_blob;

// Both are three pointer-sized words on the ABIs libcurl supports (LP64, LLP64 and ILP32):
// a mirror that does not lay out like libcurl's struct must not compile.
_Static_assert(sizeof(conveyor_curl_message) == 3 * sizeof(void *), "CURLMsg is three words");
_Static_assert(offsetof(conveyor_curl_message, easy_handle) == sizeof(void *), "CURLMsg.easy_handle is the second word");
_Static_assert(offsetof(conveyor_curl_message, data) == 2 * sizeof(void *), "CURLMsg.data is the third word");
_Static_assert(sizeof(conveyor_curl_blob) == 3 * sizeof(void *), "curl_blob is three words");
_Static_assert(offsetof(conveyor_curl_blob, len) == sizeof(void *), "curl_blob.len is the second word");
_Static_assert(offsetof(conveyor_curl_blob, flags) == 2 * sizeof(void *), "curl_blob.flags is the third word");

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
