/* metrics.c — label names and the tick histogram of server_metrics. */
#include "metrics.h"
#include "crowd/wire.h"

/* Fine steps between 20 and 75 ms: the ticks of 20 and 30 Hz and the 35 ms
 * p99 bar of the load bench fall there, and a quantile is only as exact as
 * the bucket it lands in. */
const double metrics_tick_bucket_bounds[METRICS_TICK_BUCKETS] = {
	0.001, 0.002, 0.005, 0.010, 0.020, 0.025, 0.030, 0.0333, 0.035, 0.040,
	0.045, 0.050, 0.060, 0.075, 0.100, 0.250, 0.500, 1.0,    2.5};

const char *metrics_transport_name(transport_kind kind) {
	switch (kind) {
	case TRANSPORT_TCP:
		return "tcp";
	case TRANSPORT_WS:
		return "ws";
	default:
		return "unknown";
	}
}

const char *metrics_role_name(int role_index) {
	static const char *const names[METRICS_ROLE_COUNT] = {"none", "viewer", "player", "admin"};
	return (role_index >= 0 && role_index < METRICS_ROLE_COUNT) ? names[role_index] : "unknown";
}

const char *metrics_disconnect_reason_name(disconnect_reason reason) {
	static const char *const names[DISCONNECT_REASON_COUNT] = {
	    "peer_closed",         "read_error",      "write_error", "hello_timeout", "bad_token",
	    "unsupported_version", "frame_too_large", "malformed",   "slow_consumer", "output_hard_limit",
	    "server_full",         "shutdown",        "protocol"};
	return ((int)reason >= 0 && reason < DISCONNECT_REASON_COUNT) ? names[reason] : "unknown";
}

const char *metrics_error_code_name(int code) {
	return code >= 0 ? crowd_error_code_name((uint32_t)code) : "UNKNOWN";
}

void metrics_observe_tick(server_metrics *m, double seconds) {
	int i = 0;
	while (i < METRICS_TICK_BUCKETS && seconds > metrics_tick_bucket_bounds[i]) i++;
	m->tick_duration_buckets[i]++;
	m->tick_duration_sum_seconds += seconds;
}
