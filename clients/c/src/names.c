/* names.c — human-readable texts for the client library's status codes and
 * the names of the wire's ErrorCode values (for logs and crowdctl --json). */
#include "crowd/client.h"

#include <stddef.h>

const char *crowd_client_strerror(int status) {
	switch (status) {
	case CROWD_CLIENT_OK:
		return "ok";
	case CROWD_CLIENT_ERR_ARGUMENT:
		return "invalid argument";
	case CROWD_CLIENT_ERR_RESOLVE:
		return "cannot resolve the server's address";
	case CROWD_CLIENT_ERR_CONNECT:
		return "cannot connect to the server";
	case CROWD_CLIENT_ERR_TIMEOUT:
		return "timed out";
	case CROWD_CLIENT_ERR_IO:
		return "socket error";
	case CROWD_CLIENT_ERR_CLOSED:
		return "the server closed the connection";
	case CROWD_CLIENT_ERR_PROTOCOL:
		return "the server sent undecodable data";
	case CROWD_CLIENT_ERR_FRAME_TOO_LARGE:
		return "the server sent a frame over the size limit";
	case CROWD_CLIENT_ERR_NO_MEMORY:
		return "out of memory";
	case CROWD_CLIENT_ERR_TOO_MANY:
		return "too many items for one message";
	case CROWD_CLIENT_ERR_BUFFER_FULL:
		return "output buffer full";
	case CROWD_CLIENT_ERR_ENCODE:
		return "cannot encode the message";
	default:
		return "unknown status";
	}
}

static const char *const error_names[] = {
    [crowd_v1_ErrorCode_ERROR_NONE] = "ERROR_NONE",
    [crowd_v1_ErrorCode_ERROR_MALFORMED] = "ERROR_MALFORMED",
    [crowd_v1_ErrorCode_ERROR_FRAME_TOO_LARGE] = "ERROR_FRAME_TOO_LARGE",
    [crowd_v1_ErrorCode_ERROR_UNKNOWN_MESSAGE] = "ERROR_UNKNOWN_MESSAGE",
    [crowd_v1_ErrorCode_ERROR_HELLO_REQUIRED] = "ERROR_HELLO_REQUIRED",
    [crowd_v1_ErrorCode_ERROR_HELLO_TIMEOUT] = "ERROR_HELLO_TIMEOUT",
    [crowd_v1_ErrorCode_ERROR_UNSUPPORTED_VERSION] = "ERROR_UNSUPPORTED_VERSION",
    [crowd_v1_ErrorCode_ERROR_BAD_TOKEN] = "ERROR_BAD_TOKEN",
    [crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED] = "ERROR_PERMISSION_DENIED",
    [crowd_v1_ErrorCode_ERROR_NOT_OWNER] = "ERROR_NOT_OWNER",
    [crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT] = "ERROR_INVALID_ARGUMENT",
    [crowd_v1_ErrorCode_ERROR_UNKNOWN_ID] = "ERROR_UNKNOWN_ID",
    [crowd_v1_ErrorCode_ERROR_STALE_ID] = "ERROR_STALE_ID",
    [crowd_v1_ErrorCode_ERROR_LIMIT_AGENTS_WORLD] = "ERROR_LIMIT_AGENTS_WORLD",
    [crowd_v1_ErrorCode_ERROR_LIMIT_AGENTS_CONNECTION] = "ERROR_LIMIT_AGENTS_CONNECTION",
    [crowd_v1_ErrorCode_ERROR_LIMIT_BATCH] = "ERROR_LIMIT_BATCH",
    [crowd_v1_ErrorCode_ERROR_RATE_LIMITED] = "ERROR_RATE_LIMITED",
    [crowd_v1_ErrorCode_ERROR_BAD_POLYGON] = "ERROR_BAD_POLYGON",
    [crowd_v1_ErrorCode_ERROR_ALREADY_HELLO] = "ERROR_ALREADY_HELLO",
    [crowd_v1_ErrorCode_ERROR_SLOW_CONSUMER] = "ERROR_SLOW_CONSUMER",
    [crowd_v1_ErrorCode_ERROR_SHUTTING_DOWN] = "ERROR_SHUTTING_DOWN",
    [crowd_v1_ErrorCode_ERROR_SERVER_FULL] = "ERROR_SERVER_FULL",
    [crowd_v1_ErrorCode_ERROR_INTERNAL] = "ERROR_INTERNAL",
};

const char *crowd_client_error_name(int code) {
	if (code < 0 || (size_t)code >= sizeof error_names / sizeof error_names[0] || !error_names[code])
		return "ERROR_UNKNOWN_CODE";
	return error_names[code];
}
