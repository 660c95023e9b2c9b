/* harness.c — starts and stops the real crowd-server for the integration tests
 * and records what C-client connections receive (see harness.h). The server's
 * stdout/stderr go to temporary files, so a chatty log can never block it. */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#ifndef CROWD_SERVER_PATH
#error "CROWD_SERVER_PATH must name the crowd-server binary"
#endif

static void sleep_ms(int ms) {
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
	}
}

static uint64_t now_ms(void) {
	return crowd_client_now_us() / 1000u;
}

replay_hashes harness_replay_hashes(const char *replay, const char *args, uint64_t cap) {
	replay_hashes r = {calloc(cap ? cap : 1, sizeof(uint64_t)), cap, 0, -1};
	assert_non_null(r.hashes);
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "%s %s", replay, args);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	char line[256];
	uint64_t t, h;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "tick %" SCNu64 " state_hash 0x%" SCNx64, &t, &h) == 2) {
			if (t < cap) r.hashes[t] = h;
			if (t > r.last) r.last = t;
		}
	r.status = pclose(f);
	return r;
}

char *harness_read_file(const char *path) {
	FILE *f = fopen(path, "rb");
	if (!f) return NULL;
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	for (size_t n; buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
		len += n;
		if (cap - len < 2048) {
			char *grown = realloc(buf, cap * 2);
			if (!grown) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
			cap *= 2;
		}
	}
	fclose(f);
	if (buf) buf[len] = '\0';
	return buf;
}

static bool make_temp(char *path, size_t size, const char *what) {
	snprintf(path, size, "/tmp/crowd-itest-%s-XXXXXX", what);
	int fd = mkstemp(path);
	if (fd < 0) return false;
	close(fd);
	return true;
}

/* fork/exec crowd-server with argv = [path, args...]; stdout/stderr to files. */
static pid_t spawn_server(const char *const *args, const char *out_path, const char *err_path) {
	const char *argv[64];
	size_t n = 0;
	argv[n++] = CROWD_SERVER_PATH;
	for (size_t i = 0; args && args[i] && n < 63; i++) argv[n++] = args[i];
	argv[n] = NULL;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid != 0) return pid;
	/* child: die with the test, write output to the files */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int out = open(out_path, O_WRONLY | O_TRUNC);
	int err = open(err_path, O_WRONLY | O_TRUNC);
	if (out < 0 || err < 0) _exit(127);
	dup2(out, STDOUT_FILENO);
	dup2(err, STDERR_FILENO);
	close(out);
	close(err);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

/* The port from a "listening KIND HOST:PORT" line, 0 if none yet. */
static uint16_t find_port(const char *out, const char *kind) {
	char prefix[32];
	snprintf(prefix, sizeof prefix, "listening %s ", kind);
	const char *line = strstr(out, prefix);
	if (!line) return 0;
	const char *end = strchr(line, '\n');
	if (!end) return 0; /* the line is not complete yet */
	const char *colon = NULL;
	for (const char *p = line; p < end; p++)
		if (*p == ':') colon = p;
	if (!colon) return 0;
	long port = strtol(colon + 1, NULL, 10);
	return port > 0 && port < 65536 ? (uint16_t)port : 0;
}

uint16_t server_http_port(const server_proc *s) {
	char *out = harness_read_file(s->out_path);
	uint16_t port = out ? find_port(out, "http") : 0;
	free(out);
	return port;
}

char *server_metrics(const server_proc *s) {
	char *out = harness_read_file(s->out_path);
	uint16_t port = out ? find_port(out, "http") : 0;
	free(out);
	if (!port) return NULL;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) return NULL;
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct timeval guard = {HARNESS_GUARD_MS / 1000, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
	static const char request[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0 ||
	    send(fd, request, sizeof request - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof request - 1)) {
		close(fd);
		return NULL;
	}
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	for (ssize_t n; buf && (n = recv(fd, buf + len, cap - len - 1, 0)) > 0;) {
		len += (size_t)n;
		if (cap - len < 4096) {
			char *grown = realloc(buf, cap * 2);
			if (!grown) break;
			buf = grown;
			cap *= 2;
		}
	}
	close(fd);
	if (buf) buf[len] = '\0';
	return buf;
}

double metric_value(const char *metrics, const char *sample) {
	size_t n = strlen(sample);
	for (const char *p = metrics; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, sample, n) == 0 && p[n] == ' ') return strtod(p + n + 1, NULL);
	}
	return -1;
}

void server_dump_output(const server_proc *s) {
	char *out = harness_read_file(s->out_path), *err = harness_read_file(s->err_path);
	fprintf(stderr, "---- crowd-server stdout ----\n%s\n---- crowd-server stderr ----\n%s\n---- end ----\n",
	        out ? out : "(none)", err ? err : "(none)");
	free(out);
	free(err);
}

bool server_alive(server_proc *s) {
	if (s->exited || s->pid <= 0) return false;
	int status;
	pid_t r = waitpid(s->pid, &status, WNOHANG);
	if (r == s->pid) {
		s->exited = true;
		s->wait_status = status;
		return false;
	}
	return true;
}

bool server_start(server_proc *s, const char *const *args) {
	memset(s, 0, sizeof *s);
	signal(SIGPIPE, SIG_IGN);
	if (!make_temp(s->out_path, sizeof s->out_path, "out") || !make_temp(s->err_path, sizeof s->err_path, "err"))
		return false;
	const char *all[64];
	size_t n = 0;
	all[n++] = "--listen";
	all[n++] = "127.0.0.1:0";
	all[n++] = "--http"; /* tests run in parallel: no fixed HTTP port either */
	all[n++] = "127.0.0.1:0";
	for (size_t i = 0; args && args[i] && n < 63; i++) all[n++] = args[i];
	all[n] = NULL;
	s->pid = spawn_server(all, s->out_path, s->err_path);
	if (s->pid < 0) return false;
	uint64_t deadline = now_ms() + HARNESS_GUARD_MS;
	while (now_ms() < deadline) {
		char *out = harness_read_file(s->out_path);
		s->port = out ? find_port(out, "tcp") : 0;
		free(out);
		if (s->port) return true;
		if (!server_alive(s)) break;
		sleep_ms(10);
	}
	fprintf(stderr, "harness: crowd-server did not print its listening line\n");
	server_dump_output(s);
	server_stop(s);
	return false;
}

static int wait_exit(server_proc *s, int guard_ms) {
	uint64_t deadline = now_ms() + (uint64_t)guard_ms;
	while (server_alive(s)) {
		if (now_ms() >= deadline) return -1;
		sleep_ms(5);
	}
	return s->wait_status;
}

int server_signal_and_wait(server_proc *s, int sig) {
	if (!server_alive(s)) return s->wait_status;
	kill(s->pid, sig);
	return wait_exit(s, HARNESS_GUARD_MS);
}

void server_stop(server_proc *s) {
	if (getenv("CROWD_ITEST_DUMP") && s->out_path[0]) server_dump_output(s);
	if (s->pid > 0 && server_alive(s)) {
		kill(s->pid, SIGTERM);
		if (wait_exit(s, HARNESS_GUARD_MS) == -1) {
			kill(s->pid, SIGKILL);
			wait_exit(s, HARNESS_GUARD_MS);
		}
	}
	if (s->out_path[0]) unlink(s->out_path);
	if (s->err_path[0]) unlink(s->err_path);
	s->out_path[0] = s->err_path[0] = '\0';
	s->pid = 0;
}

char *server_run_to_exit(const char *const *args, int *exit_status) {
	server_proc s;
	memset(&s, 0, sizeof s);
	*exit_status = -1;
	if (!make_temp(s.out_path, sizeof s.out_path, "out") || !make_temp(s.err_path, sizeof s.err_path, "err"))
		return NULL;
	s.pid = spawn_server(args, s.out_path, s.err_path);
	char *out = NULL;
	if (s.pid > 0) {
		*exit_status = wait_exit(&s, 4 * HARNESS_GUARD_MS);
		if (*exit_status == -1) kill(s.pid, SIGKILL), wait_exit(&s, HARNESS_GUARD_MS);
		out = harness_read_file(s.out_path);
		if (*exit_status != 0) server_dump_output(&s);
	}
	unlink(s.out_path);
	unlink(s.err_path);
	return out;
}

/* ------------------------------------------------------------------ clients */

#define MAX_CLIENTS 32
static tc *registry[MAX_CLIENTS];

static tc_answer *answer_slot(tc *t) {
	tc_answer *a = &t->answers[t->answer_count++ % TC_ANSWERS];
	free(a->ids);
	memset(a, 0, sizeof *a);
	return a;
}

static void on_welcome(void *user, const crowd_v1_Welcome *w) {
	tc *t = user;
	t->welcomed = true;
	t->welcome = *w;
}

static void on_ack(void *user, uint32_t request_id, const uint32_t *ids, size_t count) {
	tc_answer *a = answer_slot(user);
	a->request_id = request_id;
	a->ok = true;
	if (count) {
		a->ids = malloc(count * sizeof *ids);
		if (a->ids) {
			memcpy(a->ids, ids, count * sizeof *ids);
			a->ids_count = count;
		}
	}
}

static void on_error(void *user, const crowd_v1_Error *e) {
	tc *t = user;
	t->errors++;
	t->last_error_code = (int)e->code;
	if (e->request_id == 0) {
		t->unasked_errors++;
		t->last_unasked_code = (int)e->code;
		return;
	}
	tc_answer *a = answer_slot(t);
	a->request_id = e->request_id;
	a->ok = false;
	a->code = (int)e->code;
	a->index = e->index;
	snprintf(a->message, sizeof a->message, "%s", e->message);
}

static void on_snapshot(void *user, const crowd_client_snapshot *s) {
	tc *t = user;
	if (t->snapshots == 0) {
		t->first_tick = s->tick;
	} else if (s->tick > t->last_tick + t->divisor) {
		t->missed_snapshots += (s->tick - t->last_tick) / t->divisor - 1;
	}
	t->snapshots++;
	t->last_tick = s->tick;
	t->last_state_hash = s->state_hash;
	t->last_world_agent_count = s->world_agent_count;
}

static void on_world_list(void *user, const crowd_v1_WorldList *l) {
	tc *t = user;
	t->world_list_request = l->request_id;
	t->max_worlds = l->max_worlds;
	t->world_count = 0;
	for (pb_size_t i = 0; i < l->worlds_count && i < sizeof t->worlds / sizeof t->worlds[0]; i++)
		t->worlds[t->world_count++] = l->worlds[i];
}

static void on_pong(void *user, uint64_t client_time_us, uint64_t server_tick) {
	(void)client_time_us;
	tc *t = user;
	t->pongs++;
	t->last_pong_tick = server_tick;
}

static void on_closed(void *user, int status) {
	tc *t = user;
	t->closed = true;
	t->closed_status = status;
}

static tc *open_client(uint16_t port, int recv_buffer, bool pumped, const char *world) {
	tc *t = calloc(1, sizeof *t);
	if (!t) return NULL;
	t->divisor = 1;
	t->pumped = pumped;
	crowd_client_options o = crowd_client_default_options();
	o.recv_buffer_bytes = recv_buffer;
	o.user = t;
	o.callbacks.on_welcome = on_welcome;
	o.callbacks.on_ack = on_ack;
	o.callbacks.on_error = on_error;
	o.callbacks.on_snapshot = on_snapshot;
	o.callbacks.on_pong = on_pong;
	o.callbacks.on_closed = on_closed;
	o.callbacks.on_world_list = on_world_list;
	o.world = world;
	if (crowd_client_connect("127.0.0.1", port, &o, &t->client) != CROWD_CLIENT_OK) {
		free(t);
		return NULL;
	}
	for (size_t i = 0; i < MAX_CLIENTS; i++) {
		if (!registry[i]) {
			registry[i] = t;
			return t;
		}
	}
	crowd_client_close(t->client, 0);
	free(t);
	return NULL;
}

tc *tc_open(uint16_t port, int recv_buffer, bool pumped) {
	return open_client(port, recv_buffer, pumped, NULL);
}

static bool is_welcomed_or_closed(void *ctx) {
	tc *t = ctx;
	return t->welcomed || t->closed;
}

tc *tc_connect(uint16_t port, const char *token, bool keep_agents) {
	tc *t = tc_open(port, 0, true);
	if (!t) return NULL;
	if (crowd_client_hello(t->client, token, "itest", keep_agents) < 0 ||
	    !tc_pump_until(is_welcomed_or_closed, t, HARNESS_GUARD_MS) || !t->welcomed) {
		tc_close(t);
		return NULL;
	}
	return t;
}

tc *tc_connect_world(uint16_t port, const char *token, const char *world, bool keep_agents) {
	tc *t = open_client(port, 0, true, world);
	if (!t) return NULL;
	if (crowd_client_hello(t->client, token, "itest", keep_agents) < 0 ||
	    !tc_pump_until(is_welcomed_or_closed, t, HARNESS_GUARD_MS) || !t->welcomed) {
		tc_close(t);
		return NULL;
	}
	return t;
}

typedef struct list_wait {
	tc *t;
	uint32_t request_id;
} list_wait;

static bool list_arrived(void *ctx) {
	const list_wait *w = ctx;
	return w->t->world_list_request == w->request_id || w->t->closed;
}

bool tc_list_worlds(tc *t) {
	int64_t id = crowd_client_list_worlds(t->client);
	if (id < 0) return false;
	list_wait w = {t, (uint32_t)id};
	return tc_pump_until(list_arrived, &w, HARNESS_GUARD_MS) && t->world_list_request == (uint32_t)id;
}

const crowd_v1_WorldInfo *tc_world(const tc *t, const char *name) {
	for (uint32_t i = 0; i < t->world_count; i++)
		if (strcmp(t->worlds[i].name, name) == 0) return &t->worlds[i];
	return NULL;
}

void tc_close(tc *t) {
	if (!t) return;
	for (size_t i = 0; i < MAX_CLIENTS; i++)
		if (registry[i] == t) registry[i] = NULL;
	crowd_client_close(t->client, 1000);
	for (size_t i = 0; i < TC_ANSWERS; i++) free(t->answers[i].ids);
	free(t);
}

void tc_pump(int timeout_ms) {
	struct pollfd fds[MAX_CLIENTS];
	tc *who[MAX_CLIENTS];
	nfds_t n = 0;
	for (size_t i = 0; i < MAX_CLIENTS; i++) {
		tc *t = registry[i];
		if (!t || !t->pumped || t->closed || crowd_client_fd(t->client) < 0) continue;
		fds[n].fd = crowd_client_fd(t->client);
		fds[n].events = (short)(POLLIN | (crowd_client_pending_output(t->client) ? POLLOUT : 0));
		fds[n].revents = 0;
		who[n++] = t;
	}
	if (n == 0) {
		sleep_ms(timeout_ms);
		return;
	}
	if (poll(fds, n, timeout_ms) <= 0) return;
	for (nfds_t i = 0; i < n; i++)
		if (fds[i].revents) crowd_client_poll(who[i]->client, 0);
}

bool tc_pump_until(bool (*done)(void *ctx), void *ctx, int guard_ms) {
	uint64_t deadline = now_ms() + (uint64_t)guard_ms;
	while (!done(ctx)) {
		if (now_ms() >= deadline) return false;
		tc_pump(10);
	}
	return true;
}

typedef struct await_ctx {
	tc *t;
	uint32_t request_id;
	const tc_answer *found;
} await_ctx;

static bool has_answer(void *ctx) {
	await_ctx *a = ctx;
	uint64_t first = a->t->answer_count > TC_ANSWERS ? a->t->answer_count - TC_ANSWERS : 0;
	for (uint64_t i = first; i < a->t->answer_count; i++) {
		const tc_answer *ans = &a->t->answers[i % TC_ANSWERS];
		if (ans->request_id == a->request_id) {
			a->found = ans;
			return true;
		}
	}
	return a->t->closed;
}

const tc_answer *tc_await(tc *t, int64_t request_id) {
	if (request_id <= 0) return NULL;
	await_ctx a = {t, (uint32_t)request_id, NULL};
	tc_pump_until(has_answer, &a, HARNESS_GUARD_MS);
	if (!a.found) has_answer(&a); /* closed: the answer may have come just before */
	return a.found;
}

static bool is_closed(void *ctx) {
	return ((tc *)ctx)->closed;
}

bool tc_await_closed(tc *t) {
	return tc_pump_until(is_closed, t, HARNESS_GUARD_MS);
}

static bool has_unasked(void *ctx) {
	tc *t = ctx;
	return t->unasked_errors > 0 || t->closed;
}

int tc_await_unasked_error(tc *t) {
	tc_pump_until(has_unasked, t, HARNESS_GUARD_MS);
	return t->unasked_errors ? t->last_unasked_code : -1;
}

static bool has_any_error(void *ctx) {
	tc *t = ctx;
	return t->errors > 0 || t->closed;
}

int tc_await_any_error(tc *t) {
	tc_pump_until(has_any_error, t, HARNESS_GUARD_MS);
	return t->errors ? t->last_error_code : -1;
}

typedef struct tick_ctx {
	tc *t;
	uint64_t tick, snapshots;
} tick_ctx;

static bool reached_tick(void *ctx) {
	tick_ctx *c = ctx;
	return (c->t->snapshots > 0 && c->t->last_tick >= c->tick) || c->t->closed;
}

bool tc_await_tick(tc *t, uint64_t tick) {
	tick_ctx c = {t, tick, 0};
	tc_pump_until(reached_tick, &c, HARNESS_GUARD_MS);
	return t->snapshots > 0 && t->last_tick >= tick;
}

static bool got_snapshots(void *ctx) {
	tick_ctx *c = ctx;
	return c->t->snapshots >= c->snapshots || c->t->closed;
}

bool tc_await_snapshots(tc *t, uint64_t count) {
	tick_ctx c = {t, 0, t->snapshots + count};
	tc_pump_until(got_snapshots, &c, HARNESS_GUARD_MS);
	return t->snapshots >= c.snapshots;
}

int64_t tc_spawn_grid(tc *t, uint32_t n, uint32_t cols, float x0, float y0, float spacing, float speed) {
	crowd_v1_AgentSpec *specs = calloc(n ? n : 1, sizeof *specs);
	if (!specs) return CROWD_CLIENT_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < n; i++) {
		specs[i] = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
		specs[i].has_position = true;
		specs[i].position.x = x0 + (float)(i % cols) * spacing;
		specs[i].position.y = y0 + (float)(i / cols) * spacing;
		if (speed > 0) {
			specs[i].has_max_speed = specs[i].has_pref_speed = true;
			specs[i].max_speed = specs[i].pref_speed = speed;
		}
	}
	int64_t id = crowd_client_spawn(t->client, specs, n);
	free(specs);
	return id;
}

void tc_assert_ack(const tc_answer *a) {
	assert_non_null(a);
	if (!a->ok) fail_msg("expected an Ack, got %s (%s)", crowd_client_error_name(a->code), a->message);
}

void tc_assert_error(const tc_answer *a, int code) {
	assert_non_null(a);
	if (a->ok || a->code != code)
		fail_msg("expected %s, got %s (%s)", crowd_client_error_name(code),
		         a->ok ? "Ack" : crowd_client_error_name(a->code), a->message);
}

void harness_answers_ack(harness_answers *a, uint32_t request_id, const uint32_t *ids, size_t count) {
	if (request_id >= 256) return;
	a->answered[request_id] = a->ok[request_id] = true;
	for (size_t i = 0; i < count && i < 8; i++) a->ids[request_id][i] = ids[i];
}

void harness_answers_error(harness_answers *a, const crowd_v1_Error *e) {
	if (e->request_id >= 256) return;
	a->answered[e->request_id] = true;
	a->code[e->request_id] = (int)e->code;
}

void harness_await_answer(crowd_client *c, const harness_answers *a, int64_t request_id) {
	assert_true(request_id > 0 && request_id < 256);
	uint64_t guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
	while (!a->answered[request_id] && crowd_client_now_us() < guard) crowd_client_poll(c, 20);
	assert_true(a->answered[request_id]);
}
