/* names.c — human-readable texts for the client library's status codes and
 * the names of the wire's ErrorCode values (for logs and crowdctl --json). */
#include "crowd/client.h"

#include <stddef.h>
#include <string.h>

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
	case CROWD_CLIENT_ERR_UNREACHABLE:
		return "no address answered within the reconnect attempts";
	case CROWD_CLIENT_ERR_DISCONNECTED:
		return "reconnecting: not connected now";
	case CROWD_CLIENT_ERR_REFUSED:
		return "the server refused the reconnect's Hello";
	default:
		return "unknown status";
	}
}

const char *crowd_client_error_name(int code) {
	const char *name = code >= 0 ? crowd_v1_ErrorCode_name((crowd_v1_ErrorCode)code) : "";
	return strncmp(name, "ERROR_", 6) == 0 ? name : "ERROR_UNKNOWN_CODE";
}
