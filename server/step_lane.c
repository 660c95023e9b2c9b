/* step_lane.c — a low-priority thread for heavy worlds' steps (step_lane.h). */
#include "step_lane.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"

struct step_lane {
	uv_loop_t *loop;
	uv_async_t async; /* the thread's "a job is done" */
	bool async_open;
	bool shutting_down;
	int nice;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	step_lane_job *todo_head, *todo_tail; /* queued, in order */
	step_lane_job *done_head;             /* worked, for the loop (any order is fine: one job per world) */
	unsigned pending;                     /* queued or worked, not yet done (loop thread) */
};

static void *lane_main(void *arg) {
	step_lane *l = arg;
	/* Linux: a thread's nice is its own; raising it needs no privilege */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), l->nice) != 0)
		log_warn("step lane: cannot lower its priority; heavy worlds share the CPU evenly");
	pthread_mutex_lock(&l->mu);
	for (;;) {
		while (!l->stop && !l->todo_head) pthread_cond_wait(&l->cv, &l->mu);
		if (!l->todo_head && l->stop) break;
		step_lane_job *job = l->todo_head;
		l->todo_head = job->next;
		if (!l->todo_head) l->todo_tail = NULL;
		pthread_mutex_unlock(&l->mu);
		job->work(job);
		pthread_mutex_lock(&l->mu);
		job->next = l->done_head;
		l->done_head = job;
		uv_async_send(&l->async);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

static void on_done(uv_async_t *h) {
	step_lane *l = h->data;
	pthread_mutex_lock(&l->mu);
	step_lane_job *job = l->done_head;
	l->done_head = NULL;
	pthread_mutex_unlock(&l->mu);
	while (job) {
		step_lane_job *next = job->next;
		l->pending--;
		job->done(job);
		job = next;
	}
	if (l->shutting_down && l->pending == 0 && l->async_open) {
		l->async_open = false;
		uv_close((uv_handle_t *)&l->async, NULL);
	}
}

int step_lane_start(uv_loop_t *loop, int nice, step_lane **out) {
	*out = NULL;
	step_lane *l = calloc(1, sizeof *l);
	if (!l) return -1;
	l->loop = loop;
	l->nice = nice;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	if (uv_async_init(loop, &l->async, on_done) != 0) {
		step_lane_free(l);
		return -1;
	}
	l->async.data = l;
	l->async_open = true;
	if (pthread_create(&l->thread, NULL, lane_main, l) != 0) {
		uv_close((uv_handle_t *)&l->async, NULL);
		l->async_open = false;
		return -1; /* freed by step_lane_free after the loop closed the handle */
	}
	l->thread_started = true;
	*out = l;
	return 0;
}

void step_lane_queue(step_lane *l, step_lane_job *job) {
	job->next = NULL;
	l->pending++;
	pthread_mutex_lock(&l->mu);
	if (l->todo_tail)
		l->todo_tail->next = job;
	else
		l->todo_head = job;
	l->todo_tail = job;
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

void step_lane_shutdown(step_lane *l) {
	if (!l) return;
	l->shutting_down = true;
	if (l->pending == 0 && l->async_open) {
		l->async_open = false;
		uv_close((uv_handle_t *)&l->async, NULL);
	}
}

void step_lane_free(step_lane *l) {
	if (!l) return;
	if (l->thread_started) {
		pthread_mutex_lock(&l->mu);
		l->stop = true;
		pthread_cond_signal(&l->cv);
		pthread_mutex_unlock(&l->mu);
		pthread_join(l->thread, NULL);
	}
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l);
}
