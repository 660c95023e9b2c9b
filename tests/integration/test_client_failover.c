/* test_client_failover.c — the C client with several addresses
 * (crowd_client_connect_list, options.reconnect) against real crowd-server
 * processes over loopback.
 *
 * The stand-in for a promoted standby is the same data dir served by a second
 * process on another port: server A is SIGKILLed, server B starts on A's
 * --data-dir at a port reserved beforehand, and the client, given "R,A,R,B"
 * (R: a bound socket that does not listen, so it refuses), skips R at connect,
 * and after the kill skips R again and resumes at B: the same client_id
 * (resumed = true), its agents its own, its subscription back. A second case
 * puts a server with a fresh data dir (a server that knows nothing of the
 * client) before the right one: with reconnect.require_resumed its Welcome
 * counts as a failed attempt. With every address down the client gives up
 * after reconnect.max_attempts with CROWD_CLIENT_ERR_UNREACHABLE. A scripted
 * fake server in this process checks what a reconnect sends: the application's
 * Hello with the last resume key, the next address after a Hello refused by an
 * Error, the subscription asked again and its Ack kept from on_ack. Every wait
 * is for an event (a callback, a server's listening line, a frame); the guards
 * only stop a hung test. A server that goes silent without closing counts as
 * lost after options.idle_timeout_ms. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "crowd/wire.h"
#include "harness.h"

#define MAX_EVENTS 64

typedef struct player {
	crowd_client *c;
	uint32_t welcomes;
	crowd_v1_Welcome welcome;
	harness_answers ans;
	crowd_client_reconnect_event events[MAX_EVENTS];
	char event_address[MAX_EVENTS][64];
	uint32_t event_count;
	uint64_t snapshots_since_reconnect;
	uint32_t owned_in_last_snapshot;
	bool closed;
	int closed_status;
} player;

static void on_welcome(void *user, const crowd_v1_Welcome *w) {
	player *p = user;
	p->welcome = *w;
	p->welcomes++;
}

static void on_ack(void *user, uint32_t rid, const uint32_t *ids, size_t count) {
	harness_answers_ack(&((player *)user)->ans, rid, ids, count);
}

static void on_error(void *user, const crowd_v1_Error *e) {
	harness_answers_error(&((player *)user)->ans, e);
}

static void on_snapshot(void *user, const crowd_client_snapshot *s) {
	player *p = user;
	p->snapshots_since_reconnect++;
	p->owned_in_last_snapshot = 0;
	for (uint32_t i = 0; i < s->count; i++)
		if (s->owner[i] == p->welcome.client_id) p->owned_in_last_snapshot++;
}

static void on_reconnect(void *user, const crowd_client_reconnect_event *e) {
	player *p = user;
	if (p->event_count >= MAX_EVENTS) return;
	p->events[p->event_count] = *e;
	snprintf(p->event_address[p->event_count], sizeof p->event_address[0], "%s", e->address);
	p->events[p->event_count].address = p->event_address[p->event_count];
	p->event_count++;
	if (e->kind == CROWD_CLIENT_RECONNECTED) p->snapshots_since_reconnect = 0;
}

static void on_closed(void *user, int status) {
	player *p = user;
	p->closed = true;
	p->closed_status = status;
}

static crowd_client_options player_options(player *p) {
	crowd_client_options o = crowd_client_default_options();
	o.callbacks.on_welcome = on_welcome;
	o.callbacks.on_ack = on_ack;
	o.callbacks.on_error = on_error;
	o.callbacks.on_snapshot = on_snapshot;
	o.callbacks.on_reconnect = on_reconnect;
	o.callbacks.on_closed = on_closed;
	o.user = p;
	o.reconnect.enabled = true;
	return o;
}

/* Poll until pred holds or the client is over (guarded); pred's value. */
static bool pump_until(player *p, bool (*pred)(const player *)) {
	uint64_t guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
	while (!pred(p) && !p->closed && crowd_client_now_us() < guard) crowd_client_poll(p->c, 20);
	return pred(p);
}

static bool welcomed(const player *p) {
	return p->welcomes > 0;
}

static bool reconnected(const player *p) {
	return p->event_count > 0 && p->events[p->event_count - 1].kind == CROWD_CLIENT_RECONNECTED;
}

static bool owns_three_in_view(const player *p) {
	return p->snapshots_since_reconnect > 0 && p->owned_in_last_snapshot == 3;
}

static void await(player *p, int64_t rid) {
	harness_await_answer(p->c, &p->ans, rid);
}

/* A loopback port nothing listens on: bound, never listening, so a connect is
 * refused while the socket stays open. */
static int refusing_socket(uint16_t *port) {
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	socklen_t len = sizeof a;
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* A free loopback port for a server started later (refused until then). */
static uint16_t free_port(void) {
	uint16_t port = 0;
	int fd = refusing_socket(&port);
	close(fd);
	return port;
}

static void start_at(server_proc *s, uint16_t port, const char *data, const char *token) {
	char listen[32];
	snprintf(listen, sizeof listen, "127.0.0.1:%u", (unsigned)port);
	const char *args[] = {"--listen", listen, "--data-dir", data, "--token", token, "--tick-rate", "60", NULL};
	assert_true(server_start(s, args));
	assert_int_equal(s->port, port);
}

static char *temp_dir(void) {
	char *dir = strdup("/tmp/crowd-failover-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return dir;
}

static void remove_dir(char *dir) {
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	free(dir);
}

/* Spawns three agents and subscribes; returns the spawn's request id. */
static int64_t spawn_three(player *p) {
	crowd_v1_AgentSpec specs[3];
	for (int i = 0; i < 3; i++) {
		specs[i] = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
		specs[i].has_position = true;
		specs[i].position = (crowd_v1_Vec2){(float)i * 5.0f, 0.0f};
	}
	int64_t rid = crowd_client_spawn(p->c, specs, 3);
	await(p, rid);
	assert_true(p->ans.ok[rid]);
	int64_t sub = crowd_client_subscribe(p->c, NULL, 0);
	await(p, sub);
	assert_true(p->ans.ok[sub]);
	return rid;
}

/* ------------------------------------------------------------ a scripted fake server */

static int fake_listener(uint16_t *port) {
	int fd = refusing_socket(port);
	assert_int_equal(listen(fd, 4), 0);
	return fd;
}

/* Poll the client until the listener has a connection to accept; the accepted socket. */
static int fake_accept(player *p, int listener) {
	uint64_t guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
	while (crowd_client_now_us() < guard) {
		struct pollfd q = {.fd = listener, .events = POLLIN};
		if (poll(&q, 1, 0) == 1) return accept(listener, NULL, NULL);
		crowd_client_poll(p->c, 5);
	}
	return -1;
}

/* The next whole ClientMessage from fd, polling the client meanwhile (it may have to write it). */
static void fake_read(player *p, int fd, crowd_frame_splitter *in, crowd_v1_ClientMessage *out) {
	uint64_t guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
	while (crowd_client_now_us() < guard) {
		const uint8_t *frame;
		size_t len;
		if (crowd_frame_splitter_next(in, &frame, &len) == CROWD_FRAME_READY) {
			memset(out, 0, sizeof *out);
			assert_true(crowd_decode_client_message(frame, len, out));
			return;
		}
		struct pollfd q = {.fd = fd, .events = POLLIN};
		if (poll(&q, 1, 5) == 1) {
			uint8_t buf[4096];
			ssize_t n = recv(fd, buf, sizeof buf, 0);
			assert_true(n > 0);
			assert_true(crowd_frame_splitter_push(in, buf, (size_t)n));
		}
		crowd_client_poll(p->c, 0);
	}
	fail_msg("no ClientMessage came");
}

static void fake_send(int fd, crowd_v1_ServerMessage *m) {
	crowd_buf out;
	crowd_buf_init(&out);
	assert_true(crowd_encode_server_message(m, true, &out));
	assert_int_equal(send(fd, out.data, out.len, MSG_NOSIGNAL), (ssize_t)out.len);
	crowd_buf_free(&out);
}

static void fake_welcome(int fd, bool resumed, const char *key) {
	crowd_v1_ServerMessage m = crowd_v1_ServerMessage_init_zero;
	m.which_msg = crowd_v1_ServerMessage_welcome_tag;
	m.msg.welcome.protocol_major = 1;
	m.msg.welcome.precision = 100;
	m.msg.welcome.client_id = 7;
	m.msg.welcome.resumed = resumed;
	snprintf(m.msg.welcome.resume_key, sizeof m.msg.welcome.resume_key, "%s", key);
	fake_send(fd, &m);
}

static void fake_ack(int fd, uint32_t request_id) {
	crowd_v1_ServerMessage m = crowd_v1_ServerMessage_init_zero;
	m.which_msg = crowd_v1_ServerMessage_ack_tag;
	m.msg.ack.request_id = request_id;
	fake_send(fd, &m);
}

/* Two stand-in servers (listeners) and a player given both addresses, speaking
 * to one accepted connection at a time through one frame splitter. */
typedef struct fake_pair {
	int listener[2];
	player *p;
	crowd_frame_splitter in;
} fake_pair;

/* The player connects to the first listener (reconnect delays 1-2 ms, and
 * idle_timeout_ms); the accepted socket. */
static int fake_pair_open(fake_pair *f, uint32_t idle_timeout_ms) {
	uint16_t port[2];
	f->listener[0] = fake_listener(&port[0]);
	f->listener[1] = fake_listener(&port[1]);
	char list[64];
	snprintf(list, sizeof list, "127.0.0.1:%u,127.0.0.1:%u", (unsigned)port[0], (unsigned)port[1]);
	f->p = calloc(1, sizeof *f->p);
	assert_non_null(f->p);
	crowd_client_options o = player_options(f->p);
	o.reconnect.min_delay_ms = 1;
	o.reconnect.max_delay_ms = 2;
	o.idle_timeout_ms = idle_timeout_ms;
	assert_int_equal(crowd_client_connect_list(list, &o, &f->p->c), CROWD_CLIENT_OK);
	int fd = accept(f->listener[0], NULL, NULL);
	assert_true(fd >= 0);
	crowd_frame_splitter_init(&f->in, 1u << 16);
	return fd;
}

/* The player's next connection, to listener `which`: the accepted socket (read afresh). */
static int fake_pair_next(fake_pair *f, int which) {
	int fd = fake_accept(f->p, f->listener[which]);
	assert_true(fd >= 0);
	crowd_frame_splitter_free(&f->in);
	crowd_frame_splitter_init(&f->in, 1u << 16);
	return fd;
}

static void fake_pair_close(fake_pair *f) {
	crowd_frame_splitter_free(&f->in);
	crowd_client_close(f->p->c, 0);
	free(f->p);
	close(f->listener[0]);
	close(f->listener[1]);
}

static bool lost(const player *p) {
	return p->event_count >= 1;
}

static bool attempt_failed(const player *p) {
	return p->event_count >= 2;
}

static void test_what_a_reconnect_sends(void **state) {
	(void)state;
	static const char key[] = "0123456789abcdef0123456789abcdef";
	fake_pair f;
	int s1 = fake_pair_open(&f, 0);
	player *p = f.p;
	crowd_v1_ClientMessage m;

	assert_true(crowd_client_hello(p->c, "tok", "me", true) > 0);
	fake_read(p, s1, &f.in, &m);
	assert_int_equal(m.which_msg, crowd_v1_ClientMessage_hello_tag);
	assert_string_equal(m.msg.hello.resume_key, "");
	crowd_client_message_release(&m);
	fake_welcome(s1, false, key);
	assert_true(pump_until(p, welcomed));
	crowd_v1_Rect area = {.min_x = -5, .min_y = -5, .max_x = 5, .max_y = 5};
	int64_t sub = crowd_client_subscribe(p->c, &area, 3);
	fake_read(p, s1, &f.in, &m);
	assert_int_equal(m.which_msg, crowd_v1_ClientMessage_subscribe_tag);
	crowd_client_message_release(&m);
	fake_ack(s1, (uint32_t)sub);
	await(p, sub);

	/* the connection drops: the next address, whose Hello is refused by an Error */
	close(s1);
	assert_true(pump_until(p, lost));
	assert_int_equal(p->events[0].kind, CROWD_CLIENT_CONNECTION_LOST);
	int s2 = fake_pair_next(&f, 1);
	fake_read(p, s2, &f.in, &m);
	assert_int_equal(m.which_msg, crowd_v1_ClientMessage_hello_tag);
	assert_string_equal(m.msg.hello.token, "tok");
	assert_string_equal(m.msg.hello.client_name, "me");
	assert_true(m.msg.hello.keep_agents_on_disconnect);
	assert_string_equal(m.msg.hello.resume_key, key);
	uint32_t hello_id = m.request_id;
	crowd_client_message_release(&m);
	crowd_v1_ServerMessage e = crowd_v1_ServerMessage_init_zero;
	e.which_msg = crowd_v1_ServerMessage_error_tag;
	e.msg.error.request_id = hello_id;
	e.msg.error.code = crowd_v1_ErrorCode_ERROR_SERVER_FULL;
	fake_send(s2, &e);
	assert_true(pump_until(p, attempt_failed));
	assert_int_equal(p->events[1].kind, CROWD_CLIENT_ATTEMPT_FAILED);
	assert_int_equal(p->events[1].status, CROWD_CLIENT_ERR_REFUSED);
	assert_int_equal(p->events[1].next_delay_ms, 0);
	assert_true(hello_id < 256 && p->ans.code[hello_id] == crowd_v1_ErrorCode_ERROR_SERVER_FULL); /* on_error saw it */

	/* the first address again, in the same pass: welcomed, resumed; the subscription asked again */
	int s3 = fake_pair_next(&f, 0);
	fake_read(p, s3, &f.in, &m);
	assert_int_equal(m.which_msg, crowd_v1_ClientMessage_hello_tag);
	assert_string_equal(m.msg.hello.resume_key, key);
	crowd_client_message_release(&m);
	fake_welcome(s3, true, key);
	assert_true(pump_until(p, reconnected));
	assert_int_equal(p->events[2].attempt, 2);
	assert_true(p->events[2].resumed);
	fake_read(p, s3, &f.in, &m);
	assert_int_equal(m.which_msg, crowd_v1_ClientMessage_subscribe_tag);
	assert_true(m.msg.subscribe.has_area);
	assert_true(m.msg.subscribe.area.max_x == 5.0f);
	assert_int_equal(m.msg.subscribe.divisor, 3);
	uint32_t resub = m.request_id;
	crowd_client_message_release(&m);
	uint64_t before = crowd_client_get_counters(p->c).acks_received;
	fake_ack(s3, resub);
	uint64_t guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
	while (crowd_client_get_counters(p->c).acks_received == before && crowd_client_now_us() < guard)
		crowd_client_poll(p->c, 5);
	assert_int_equal(crowd_client_get_counters(p->c).acks_received, before + 1);
	assert_true(resub < 256);
	assert_false(p->ans.answered[resub]); /* the library's own request: not the application's on_ack */

	fake_pair_close(&f);
	close(s2);
	close(s3);
}

/* A server that goes silent without closing (its machine vanished: no FIN): with
 * options.idle_timeout_ms the connection counts as lost and the next address is tried. */
static void test_a_silent_server_counts_as_lost(void **state) {
	(void)state;
	static const char key[] = "fedcba9876543210fedcba9876543210";
	fake_pair f;
	int s1 = fake_pair_open(&f, 300);
	player *p = f.p;
	crowd_v1_ClientMessage m;
	assert_true(crowd_client_hello(p->c, "tok", "me", false) > 0);
	fake_read(p, s1, &f.in, &m);
	crowd_client_message_release(&m);
	fake_welcome(s1, false, key);
	assert_true(pump_until(p, welcomed));

	/* s1 stays open and sends nothing more */
	assert_true(pump_until(p, lost));
	assert_int_equal(p->events[0].kind, CROWD_CLIENT_CONNECTION_LOST);
	assert_int_equal(p->events[0].status, CROWD_CLIENT_ERR_TIMEOUT);
	int s2 = fake_pair_next(&f, 1);
	fake_read(p, s2, &f.in, &m);
	assert_string_equal(m.msg.hello.resume_key, key);
	crowd_client_message_release(&m);
	fake_welcome(s2, true, key);
	assert_true(pump_until(p, reconnected));
	assert_true(p->events[p->event_count - 1].resumed);

	fake_pair_close(&f);
	close(s1);
	close(s2);
}

static void test_address_lists(void **state) {
	(void)state;
	assert_int_equal(crowd_client_count_addresses("127.0.0.1:7777"), 1);
	assert_int_equal(crowd_client_count_addresses("a:1, b:2 ,[::1]:3"), 3);
	assert_int_equal(crowd_client_count_addresses("a:1,,b:2"), CROWD_CLIENT_ERR_ARGUMENT);
	assert_int_equal(crowd_client_count_addresses("a:1,b"), CROWD_CLIENT_ERR_ARGUMENT);
	assert_int_equal(crowd_client_count_addresses("a:1,"), CROWD_CLIENT_ERR_ARGUMENT);
	assert_int_equal(crowd_client_count_addresses(""), CROWD_CLIENT_ERR_ARGUMENT);
	char many[1024] = "";
	for (int i = 0; i <= CROWD_CLIENT_MAX_ADDRESSES; i++) strcat(many, i ? ",h:1" : "h:1");
	assert_int_equal(crowd_client_count_addresses(many), CROWD_CLIENT_ERR_ARGUMENT);
	crowd_client *c = NULL;
	assert_int_equal(crowd_client_connect_list("nohost", NULL, &c), CROWD_CLIENT_ERR_ARGUMENT);
	assert_null(c);
	/* every address refuses: the initial connect fails with the last one's status */
	uint16_t r1, r2;
	int f1 = refusing_socket(&r1), f2 = refusing_socket(&r2);
	char list[64];
	snprintf(list, sizeof list, "127.0.0.1:%u,127.0.0.1:%u", (unsigned)r1, (unsigned)r2);
	assert_int_equal(crowd_client_connect_list(list, NULL, &c), CROWD_CLIENT_ERR_CONNECT);
	assert_null(c);
	close(f1);
	close(f2);
}

static void test_failover_to_the_same_data_dir_on_another_port(void **state) {
	(void)state;
	char *dir = temp_dir();
	char data[128];
	snprintf(data, sizeof data, "%s/data", dir);
	uint16_t refusing, port_b = free_port();
	int refuser = refusing_socket(&refusing);
	server_proc a, b;
	start_at(&a, free_port(), data, "p1=player");
	char list[128];
	snprintf(list, sizeof list, "127.0.0.1:%u,127.0.0.1:%u,127.0.0.1:%u,127.0.0.1:%u", (unsigned)refusing,
	         (unsigned)a.port, (unsigned)refusing, (unsigned)port_b);
	char addr_a[32], addr_b[32], addr_r[32];
	snprintf(addr_a, sizeof addr_a, "127.0.0.1:%u", (unsigned)a.port);
	snprintf(addr_b, sizeof addr_b, "127.0.0.1:%u", (unsigned)port_b);
	snprintf(addr_r, sizeof addr_r, "127.0.0.1:%u", (unsigned)refusing);

	player *p = calloc(1, sizeof *p);
	crowd_client_options o = player_options(p);
	/* the first address refuses: skipped */
	assert_int_equal(crowd_client_connect_list(list, &o, &p->c), CROWD_CLIENT_OK);
	assert_string_equal(crowd_client_address(p->c), addr_a);
	assert_true(crowd_client_hello(p->c, "p1", "failover", false) > 0);
	assert_true(pump_until(p, welcomed));
	assert_false(p->welcome.resumed);
	assert_int_equal(strlen(p->welcome.resume_key), 32);
	const uint32_t id = p->welcome.client_id;
	int64_t rid = spawn_three(p);
	uint32_t agents[3];
	memcpy(agents, p->ans.ids[rid], sizeof agents);
	assert_true(pump_until(p, owns_three_in_view));

	/* A dies without a goodbye; B takes over its data dir on another port. The
	 * client is not polled meanwhile, so it meets B already listening. */
	assert_true(server_signal_and_wait(&a, SIGKILL) >= 0);
	start_at(&b, port_b, data, "p1=player");
	assert_true(pump_until(p, reconnected));
	assert_int_equal(p->event_count, 3);
	assert_int_equal(p->events[0].kind, CROWD_CLIENT_CONNECTION_LOST);
	assert_string_equal(p->events[0].address, addr_a);
	assert_int_equal(p->events[1].kind, CROWD_CLIENT_ATTEMPT_FAILED);
	assert_string_equal(p->events[1].address, addr_r);
	assert_int_equal(p->events[1].status, CROWD_CLIENT_ERR_CONNECT);
	assert_int_equal(p->events[1].attempt, 1);
	assert_int_equal(p->events[1].next_delay_ms, 0); /* the same pass over the list: no wait */
	assert_int_equal(p->events[2].kind, CROWD_CLIENT_RECONNECTED);
	assert_string_equal(p->events[2].address, addr_b);
	assert_int_equal(p->events[2].attempt, 2);
	assert_true(p->events[2].resumed);
	assert_int_equal(p->events[2].client_id, id);
	assert_int_equal(p->welcomes, 2);
	assert_true(p->welcome.resumed);
	assert_string_equal(crowd_client_address(p->c), addr_b);
	assert_int_equal(crowd_client_get_counters(p->c).reconnects, 1);

	/* its agents are its own at B, and its subscription came back by itself */
	float x = 30.0f, y = 30.0f;
	rid = crowd_client_set_targets(p->c, agents, 3, &x, &y, 1);
	await(p, rid);
	assert_true(p->ans.ok[rid]);
	assert_true(pump_until(p, owns_three_in_view));
	assert_false(p->closed);

	crowd_client_close(p->c, 0);
	free(p);
	close(refuser);
	server_stop(&a);
	assert_true(server_signal_and_wait(&b, SIGTERM) >= 0);
	server_stop(&b);
	remove_dir(dir);
}

static void test_require_resumed_skips_a_server_that_does_not_know_the_client(void **state) {
	(void)state;
	char *dir = temp_dir();
	char data[128], fresh[128];
	snprintf(data, sizeof data, "%s/data", dir);
	snprintf(fresh, sizeof fresh, "%s/fresh", dir);
	uint16_t port_b = free_port(), port_c = free_port();
	server_proc a, b, c;
	start_at(&a, free_port(), data, "p1=player");
	char list[128];
	snprintf(list, sizeof list, "127.0.0.1:%u,127.0.0.1:%u,127.0.0.1:%u", (unsigned)a.port, (unsigned)port_b,
	         (unsigned)port_c);
	player *p = calloc(1, sizeof *p);
	crowd_client_options o = player_options(p);
	o.reconnect.require_resumed = true;
	assert_int_equal(crowd_client_connect_list(list, &o, &p->c), CROWD_CLIENT_OK);
	assert_true(crowd_client_hello(p->c, "p1", "failover", false) > 0);
	assert_true(pump_until(p, welcomed));
	const uint32_t id = p->welcome.client_id;
	spawn_three(p);

	/* B: another server with its own, empty data dir; C: A's data dir */
	assert_true(server_signal_and_wait(&a, SIGKILL) >= 0);
	start_at(&b, port_b, fresh, "p1=player");
	start_at(&c, port_c, data, "p1=player");
	assert_true(pump_until(p, reconnected));
	assert_int_equal(p->event_count, 3);
	assert_int_equal(p->events[1].kind, CROWD_CLIENT_ATTEMPT_FAILED);
	assert_int_equal(p->events[1].status, CROWD_CLIENT_ERR_REFUSED);
	assert_int_equal(p->events[2].kind, CROWD_CLIENT_RECONNECTED);
	assert_int_equal(p->events[2].attempt, 2);
	assert_true(p->events[2].resumed);
	assert_int_equal(p->events[2].client_id, id);
	assert_true(pump_until(p, owns_three_in_view));

	crowd_client_close(p->c, 0);
	free(p);
	server_stop(&a);
	server_stop(&b);
	server_stop(&c);
	remove_dir(dir);
}

static bool closed(const player *p) {
	return p->closed;
}

static void test_every_address_down_gives_up_after_the_attempts(void **state) {
	(void)state;
	char *dir = temp_dir();
	char data[128];
	snprintf(data, sizeof data, "%s/data", dir);
	uint16_t refusing;
	int refuser = refusing_socket(&refusing);
	server_proc a;
	start_at(&a, free_port(), data, "p1=player");
	char list[64];
	snprintf(list, sizeof list, "127.0.0.1:%u,127.0.0.1:%u", (unsigned)a.port, (unsigned)refusing);
	player *p = calloc(1, sizeof *p);
	crowd_client_options o = player_options(p);
	o.reconnect.max_attempts = 5;
	o.reconnect.min_delay_ms = 5;
	o.reconnect.max_delay_ms = 20;
	assert_int_equal(crowd_client_connect_list(list, &o, &p->c), CROWD_CLIENT_OK);
	assert_true(crowd_client_hello(p->c, "p1", "failover", false) > 0);
	assert_true(pump_until(p, welcomed));

	assert_true(server_signal_and_wait(&a, SIGKILL) >= 0);
	uint64_t guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
	while (p->event_count == 0 && crowd_client_now_us() < guard) crowd_client_poll(p->c, 20);
	assert_int_equal(p->events[0].kind, CROWD_CLIENT_CONNECTION_LOST);
	/* while reconnecting, commands are refused at once, not queued */
	float x = 0, y = 0;
	uint32_t one = 1;
	assert_int_equal(crowd_client_set_targets(p->c, &one, 1, &x, &y, 1), CROWD_CLIENT_ERR_DISCONNECTED);
	assert_int_equal(crowd_client_state(p->c), 0);

	assert_true(pump_until(p, closed));
	assert_int_equal(p->closed_status, CROWD_CLIENT_ERR_UNREACHABLE);
	assert_int_equal(crowd_client_state(p->c), CROWD_CLIENT_ERR_UNREACHABLE);
	assert_int_equal(crowd_client_poll(p->c, 0), CROWD_CLIENT_ERR_UNREACHABLE);
	assert_int_equal(p->event_count, 1 + 5);
	for (uint32_t i = 1; i <= 5; i++) {
		assert_int_equal(p->events[i].kind, CROWD_CLIENT_ATTEMPT_FAILED);
		assert_int_equal(p->events[i].attempt, i);
		assert_int_equal(p->events[i].status, CROWD_CLIENT_ERR_CONNECT);
	}
	/* attempts alternate between the two addresses, starting after A; a wait
	 * before each pass over the list, doubling (5, 10, 20 ms times a jitter in
	 * [0.75, 1)), none after the last attempt */
	assert_true(p->events[0].next_delay_ms >= 3 && p->events[0].next_delay_ms <= 5);
	assert_int_equal(p->events[1].next_delay_ms, 0);
	assert_true(p->events[2].next_delay_ms >= 7 && p->events[2].next_delay_ms <= 10);
	assert_int_equal(p->events[3].next_delay_ms, 0);
	assert_true(p->events[4].next_delay_ms >= 15 && p->events[4].next_delay_ms <= 20);
	assert_int_equal(p->events[5].next_delay_ms, -1);
	assert_string_equal(p->events[1].address, p->events[3].address);
	assert_string_not_equal(p->events[1].address, p->events[2].address);

	crowd_client_close(p->c, 0);
	free(p);
	close(refuser);
	server_stop(&a);
	remove_dir(dir);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_address_lists),
	    cmocka_unit_test(test_what_a_reconnect_sends),
	    cmocka_unit_test(test_a_silent_server_counts_as_lost),
	    cmocka_unit_test(test_failover_to_the_same_data_dir_on_another_port),
	    cmocka_unit_test(test_require_resumed_skips_a_server_that_does_not_know_the_client),
	    cmocka_unit_test(test_every_address_down_gives_up_after_the_attempts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
