/* commands.c — one function per crowd.v1 request: check the arguments, fill a
 * ClientMessage (pointer fields borrow the caller's arrays; nanopb only reads
 * them while encoding) and hand it to crowd_client_enqueue. */
#include "client_internal.h"

#include <string.h>

/* nanopb's array counts are pb_size_t (16 bits in Debian's build). */
#define MAX_ITEMS ((size_t)(pb_size_t) ~(pb_size_t)0)

static crowd_v1_ClientMessage empty_message(pb_size_t which) {
	crowd_v1_ClientMessage m;
	memset(&m, 0, sizeof m);
	m.which_msg = which;
	return m;
}

static bool copy_string(char *dst, size_t dst_size, const char *src) {
	if (!src) {
		dst[0] = '\0';
		return true;
	}
	size_t n = strlen(src);
	if (n >= dst_size) return false;
	memcpy(dst, src, n + 1);
	return true;
}

int64_t crowd_client_send_message(crowd_client *c, crowd_v1_ClientMessage *message) {
	return crowd_client_enqueue(c, message);
}

int64_t crowd_client_hello(crowd_client *c, const char *token, const char *client_name,
                           bool keep_agents_on_disconnect) {
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_hello_tag);
	crowd_v1_Hello *h = &m.msg.hello;
	h->protocol_major = CROWD_PROTOCOL_MAJOR;
	h->protocol_minor = CROWD_PROTOCOL_MINOR;
	h->keep_agents_on_disconnect = keep_agents_on_disconnect;
	h->world = c->world[0] ? c->world : NULL;
	if (!copy_string(h->token, sizeof h->token, token) ||
	    !copy_string(h->client_name, sizeof h->client_name, client_name))
		return CROWD_CLIENT_ERR_ARGUMENT;
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_hello_resume(crowd_client *c, const char *token, const char *client_name,
                                  bool keep_agents_on_disconnect, const char *resume_key) {
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_hello_tag);
	crowd_v1_Hello *h = &m.msg.hello;
	h->protocol_major = CROWD_PROTOCOL_MAJOR;
	h->protocol_minor = CROWD_PROTOCOL_MINOR;
	h->keep_agents_on_disconnect = keep_agents_on_disconnect;
	h->world = c->world[0] ? c->world : NULL;
	if (!copy_string(h->token, sizeof h->token, token) ||
	    !copy_string(h->client_name, sizeof h->client_name, client_name) ||
	    !copy_string(h->resume_key, sizeof h->resume_key, resume_key))
		return CROWD_CLIENT_ERR_ARGUMENT;
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_create_world(crowd_client *c, const char *name, const crowd_v1_WorldSettings *settings) {
	if (!crowd_world_name_valid(name)) return CROWD_CLIENT_ERR_ARGUMENT;
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_create_world_tag);
	m.msg.create_world.name = (char *)name;
	if (settings) {
		m.msg.create_world.has_settings = true;
		m.msg.create_world.settings = *settings;
	}
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_close_world(crowd_client *c, const char *name, bool delete_data) {
	if (!crowd_world_name_valid(name)) return CROWD_CLIENT_ERR_ARGUMENT;
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_close_world_tag);
	m.msg.close_world.name = (char *)name;
	m.msg.close_world.delete_data = delete_data;
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_list_worlds(crowd_client *c) {
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_list_worlds_tag);
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_join_world(crowd_client *c, const char *name) {
	if (!crowd_world_name_valid(name)) return CROWD_CLIENT_ERR_ARGUMENT;
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_join_world_tag);
	m.msg.join_world.name = (char *)name;
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_spawn(crowd_client *c, const crowd_v1_AgentSpec *agents, size_t count) {
	if (!agents && count) return CROWD_CLIENT_ERR_ARGUMENT;
	if (count > MAX_ITEMS) return CROWD_CLIENT_ERR_TOO_MANY;
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_spawn_agents_tag);
	m.msg.spawn_agents.agents_count = (pb_size_t)count;
	m.msg.spawn_agents.agents = (crowd_v1_AgentSpec *)agents;
	return crowd_client_enqueue(c, &m);
}

/* ids (count) with one value pair per id, or one pair for all. */
static int check_pairs(const uint32_t *ids, size_t count, const float *a, const float *b, size_t pairs) {
	if ((!ids && count) || (!a && pairs) || (!b && pairs)) return CROWD_CLIENT_ERR_ARGUMENT;
	if (count > MAX_ITEMS || pairs > MAX_ITEMS) return CROWD_CLIENT_ERR_TOO_MANY;
	return CROWD_CLIENT_OK;
}

int64_t crowd_client_set_targets(crowd_client *c, const uint32_t *ids, size_t count, const float *x, const float *y,
                                 size_t xy_count) {
	int s = check_pairs(ids, count, x, y, xy_count);
	if (s < 0) return s;
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_set_targets_tag);
	crowd_v1_SetTargets *t = &m.msg.set_targets;
	t->ids_count = (pb_size_t)count;
	t->ids = (uint32_t *)ids;
	t->x_count = t->y_count = (pb_size_t)xy_count;
	t->x = (float *)x;
	t->y = (float *)y;
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_set_targets_steer(crowd_client *c, const uint32_t *ids, size_t count, const float *x,
                                       const float *y, size_t xy_count, crowd_v1_SteerMode steer) {
	int s = check_pairs(ids, count, x, y, xy_count);
	if (s < 0) return s;
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_set_targets_tag);
	crowd_v1_SetTargets *t = &m.msg.set_targets;
	t->ids_count = (pb_size_t)count;
	t->ids = (uint32_t *)ids;
	t->x_count = t->y_count = (pb_size_t)xy_count;
	t->x = (float *)x;
	t->y = (float *)y;
	t->steer = &steer;
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_subscribe_events(crowd_client *c, bool all_agents, bool unsubscribe) {
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_subscribe_events_tag);
	m.msg.subscribe_events.all_agents = all_agents;
	m.msg.subscribe_events.unsubscribe = unsubscribe;
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_get_paths(crowd_client *c, const uint32_t *ids, size_t count) {
	if (!ids && count) return CROWD_CLIENT_ERR_ARGUMENT;
	if (count > MAX_ITEMS) return CROWD_CLIENT_ERR_TOO_MANY;
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_get_paths_tag);
	m.msg.get_paths.ids_count = (pb_size_t)count;
	m.msg.get_paths.ids = (uint32_t *)ids;
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_set_velocities(crowd_client *c, const uint32_t *ids, size_t count, const float *vx,
                                    const float *vy, size_t v_count) {
	int s = check_pairs(ids, count, vx, vy, v_count);
	if (s < 0) return s;
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_set_velocities_tag);
	crowd_v1_SetVelocities *v = &m.msg.set_velocities;
	v->ids_count = (pb_size_t)count;
	v->ids = (uint32_t *)ids;
	v->vx_count = v->vy_count = (pb_size_t)v_count;
	v->vx = (float *)vx;
	v->vy = (float *)vy;
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_remove_agents(crowd_client *c, const uint32_t *ids, size_t count) {
	if (!ids && count) return CROWD_CLIENT_ERR_ARGUMENT;
	if (count > MAX_ITEMS) return CROWD_CLIENT_ERR_TOO_MANY;
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_remove_agents_tag);
	m.msg.remove_agents.ids_count = (pb_size_t)count;
	m.msg.remove_agents.ids = (uint32_t *)ids;
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_add_obstacle(crowd_client *c, const float *x, const float *y, size_t count) {
	if ((!x || !y) && count) return CROWD_CLIENT_ERR_ARGUMENT;
	if (count > MAX_ITEMS) return CROWD_CLIENT_ERR_TOO_MANY;
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_add_obstacle_tag);
	m.msg.add_obstacle.x_count = m.msg.add_obstacle.y_count = (pb_size_t)count;
	m.msg.add_obstacle.x = (float *)x;
	m.msg.add_obstacle.y = (float *)y;
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_remove_obstacle(crowd_client *c, uint32_t obstacle_id) {
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_remove_obstacle_tag);
	m.msg.remove_obstacle.id = obstacle_id;
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_subscribe(crowd_client *c, const crowd_v1_Rect *area, uint32_t divisor) {
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_subscribe_tag);
	if (area) {
		m.msg.subscribe.has_area = true;
		m.msg.subscribe.area = *area;
	}
	m.msg.subscribe.divisor = divisor;
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_unsubscribe(crowd_client *c) {
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_subscribe_tag);
	m.msg.subscribe.unsubscribe = true;
	return crowd_client_enqueue(c, &m);
}

int64_t crowd_client_ping(crowd_client *c, uint64_t client_time_us) {
	crowd_v1_ClientMessage m = empty_message(crowd_v1_ClientMessage_ping_tag);
	m.msg.ping.client_time_us = client_time_us ? client_time_us : crowd_client_now_us();
	return crowd_client_enqueue(c, &m);
}
