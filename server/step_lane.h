/* step_lane.h — one thread, at a lower CPU priority (nice), that runs the
 * steps of worlds whose steps overrun their period ("heavy" worlds). The
 * kernel then gives the shared pool's threads, which step every other world,
 * most of the CPU whenever both want it: a heavy world slows itself, not the
 * light ones. Jobs run in the order queued; each job's `done` runs on the
 * loop thread afterwards (as uv_queue_work's after-work callback does). */
#ifndef CROWD_SERVER_STEP_LANE_H
#define CROWD_SERVER_STEP_LANE_H

#include <stdbool.h>

#include <uv.h>

typedef struct step_lane step_lane;

typedef struct step_lane_job {
	void (*work)(struct step_lane_job *job); /* on the lane's thread */
	void (*done)(struct step_lane_job *job); /* then on the loop thread */
	struct step_lane_job *next;
} step_lane_job;

/** Start the lane's thread at `nice` (added to the process's). 0, or -1. */
int step_lane_start(uv_loop_t *loop, int nice, step_lane **out);

/** Run job->work on the lane, then job->done on the loop. */
void step_lane_queue(step_lane *l, step_lane_job *job);

/** The loop is stopping: release the lane's handle once its queued jobs are
 * done (so uv_run can return after their `done`). */
void step_lane_shutdown(step_lane *l);

/** After uv_run returned: stop the thread and free. NULL allowed. */
void step_lane_free(step_lane *l);

#endif
