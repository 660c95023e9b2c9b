/* harness.h — what every integration test shares: start the real crowd-server
 * on a free loopback port (fork/exec, port read from its "listening tcp" line),
 * stop it, and drive it with C-client connections whose answers, errors and
 * snapshot ticks are recorded. Waits are bounded by tick counts; the wall-clock
 * guards only stop a hung test, they never decide a pass. */
#ifndef CROWD_ITEST_HARNESS_H
#define CROWD_ITEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "crowd/client.h"

/** Hang guard for any single wait (ms): generous, for ASan builds on a busy machine. */
#define HARNESS_GUARD_MS 30000

/* --------------------------------------------- answers of an own client */

/** The answers to one crowd_client's requests 1..255, for tests that drive
 * the C client library with their own callbacks (reconnects, resume keys). */
typedef struct harness_answers {
	bool answered[256], ok[256];
	int code[256];
	uint32_t ids[256][8]; /* the first 8 ids of each Ack */
} harness_answers;

/** Record an Ack / an Error (from on_ack / on_error); ids past 255 are ignored. */
void harness_answers_ack(harness_answers *a, uint32_t request_id, const uint32_t *ids, size_t count);
void harness_answers_error(harness_answers *a, const crowd_v1_Error *e);
/** Poll c until request_id is answered (guarded), and assert that it was. */
void harness_await_answer(crowd_client *c, const harness_answers *a, int64_t request_id);

/* ------------------------------------------------------------------ server */

typedef struct server_proc {
	pid_t pid;
	uint16_t port;
	char out_path[64], err_path[64];
	bool exited;
	int wait_status;
} server_proc;

/** Start crowd-server with `--listen 127.0.0.1:0 --http 127.0.0.1:0` and the NULL-terminated extra
 * arguments; wait for its listening line. False (and output dumped) on failure. */
bool server_start(server_proc *s, const char *const *args);
/** Run crowd-server to completion with these arguments (no --listen added);
 * returns its stdout (malloc'd) and sets *exit_status (waitpid status). */
char *server_run_to_exit(const char *const *args, int *exit_status);
/** Send a signal; wait for the exit (guarded); returns the waitpid status, -1 if it hung. */
int server_signal_and_wait(server_proc *s, int sig);
/** Whether the process is still running. */
bool server_alive(server_proc *s);
/** Stop (SIGTERM, then SIGKILL if it hangs) and delete the output files. */
void server_stop(server_proc *s);
/** GET /metrics from the server's HTTP port (its "listening http" line);
 * the body, malloc'd, or NULL. */
char *server_metrics(const server_proc *s);
/** The server's HTTP port (its "listening http" line), 0 if none. */
uint16_t server_http_port(const server_proc *s);
/** The value of one Prometheus sample, e.g. `crowd_disconnects_total{reason="output_hard_limit"}`; -1 if absent. */
double metric_value(const char *metrics, const char *sample);
/** A whole file as a NUL-terminated string (malloc'd), or NULL. */
char *harness_read_file(const char *path);
/** What `REPLAY ARGS` (a crowd-replay) printed: hashes[t] is tick t's
 * "tick T state_hash 0x..." line (0: none; ticks from `cap` on are not kept),
 * last the highest tick printed, status pclose's. */
typedef struct replay_hashes {
	uint64_t *hashes, cap, last;
	int status;
} replay_hashes;
/** Run it and read its lines (hashes: calloc'd, free it). */
replay_hashes harness_replay_hashes(const char *replay, const char *args, uint64_t cap);

/** Print the server's stdout and stderr to our stderr (on failure). */
void server_dump_output(const server_proc *s);

/* ------------------------------------------------------------------ clients */

#define TC_ANSWERS 256

typedef struct tc_answer {
	uint32_t request_id;
	bool ok;        /* Ack (true) or Error (false) */
	int code;       /* Error code */
	uint32_t index; /* Error index */
	char message[129];
	uint32_t *ids; /* Ack ids */
	size_t ids_count;
} tc_answer;

typedef struct tc {
	crowd_client *client;
	bool pumped; /* read by tc_pump (false: a client that never reads) */
	bool welcomed;
	crowd_v1_Welcome welcome;
	tc_answer answers[TC_ANSWERS];
	uint64_t answer_count;
	/* errors with request_id 0 (server speaking unasked) */
	uint32_t unasked_errors;
	int last_unasked_code;
	bool closed;
	int closed_status;
	uint32_t errors; /* every Error, asked or not */
	int last_error_code;
	uint32_t pongs;
	uint64_t last_pong_tick;
	/* snapshots */
	uint64_t snapshots, first_tick, last_tick;
	uint64_t missed_snapshots; /* ticks skipped beyond the divisor */
	uint32_t divisor;          /* expected tick step between snapshots (1 = every tick) */
	uint64_t last_state_hash;
	uint32_t last_world_agent_count;
	/* the last WorldList (minor 2) */
	uint32_t world_list_request; /* its request_id (0: none yet) */
	uint32_t world_count, max_worlds;
	crowd_v1_WorldInfo worlds[16];
} tc;

/** Connect to 127.0.0.1:port (recv_buffer 0 = default), registered for
 * pumping when `pumped`. No Hello sent. NULL on failure. */
tc *tc_open(uint16_t port, int recv_buffer, bool pumped);
/** tc_open + Hello(token) + wait for Welcome. NULL on failure. */
tc *tc_connect(uint16_t port, const char *token, bool keep_agents);
/** tc_connect in the world `world` (Hello.world; NULL: none named). NULL when
 * no Welcome came (the client is closed then). */
tc *tc_connect_world(uint16_t port, const char *token, const char *world, bool keep_agents);
/** ListWorlds, and wait for its WorldList in t->worlds; false if none came. */
bool tc_list_worlds(tc *t);
/** The world `name` in t's last WorldList, or NULL. */
const crowd_v1_WorldInfo *tc_world(const tc *t, const char *name);
/** Close and unregister. */
void tc_close(tc *t);

/** Wait up to timeout_ms for any registered client's socket, then poll each. */
void tc_pump(int timeout_ms);
/** Pump until done(ctx) or the guard passes; true if done. */
bool tc_pump_until(bool (*done)(void *ctx), void *ctx, int guard_ms);

/** The answer to request_id, pumping until it arrives, the client closes or
 * the guard passes; NULL if none came. Negative request_id (a send failure) gives NULL. */
const tc_answer *tc_await(tc *t, int64_t request_id);
/** cmocka checks of an answer: an Ack, or an Error with this code (failing
 * with what came instead). */
void tc_assert_ack(const tc_answer *a);
void tc_assert_error(const tc_answer *a, int code);
/** Pump until the client is closed (guarded); true if it closed. */
bool tc_await_closed(tc *t);
/** Pump until an unasked Error arrives or the client closes; returns its code or -1. */
int tc_await_unasked_error(tc *t);
/** Pump until any Error (asked or not) arrives or the client closes; its code or -1. */
int tc_await_any_error(tc *t);
/** Pump until client t has a snapshot with tick >= tick; true if it got one. */
bool tc_await_tick(tc *t, uint64_t tick);
/** Pump until t has received `count` more snapshots. */
bool tc_await_snapshots(tc *t, uint64_t count);

/** Spawn n agents on a grid of `cols` columns from (x0, y0), `spacing` apart;
 * speed > 0 sets max_speed and pref_speed. Returns the request id. */
int64_t tc_spawn_grid(tc *t, uint32_t n, uint32_t cols, float x0, float y0, float spacing, float speed);

#endif /* CROWD_ITEST_HARNESS_H */
