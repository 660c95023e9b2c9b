/* scenario_nav.c — see scenario_nav.h. */
#include "scenario_nav.h"

static void widen(orca_vec2 *lo, orca_vec2 *hi, orca_vec2 p)
{
	lo->x = p.x < lo->x ? p.x : lo->x;
	lo->y = p.y < lo->y ? p.y : lo->y;
	hi->x = p.x > hi->x ? p.x : hi->x;
	hi->y = p.y > hi->y ? p.y : hi->y;
}

orca_nav_def scenario_nav_def(const scenario *s)
{
	orca_nav_def d = orca_nav_default_def();
	orca_vec2 lo = {0, 0}, hi = {0, 0};
	bool any = false;
	for (uint32_t i = 0; i < s->agent_count; ++i) {
		if (!any)
			lo = hi = s->start[i];
		any = true;
		widen(&lo, &hi, s->start[i]);
		widen(&lo, &hi, s->goal[i]);
	}
	for (uint32_t i = 0; i < s->obstacle_count; ++i)
		for (uint32_t k = 0; k < s->obstacle_sizes[i]; ++k) {
			if (!any)
				lo = hi = s->obstacles[i][k];
			any = true;
			widen(&lo, &hi, s->obstacles[i][k]);
		}
	const float margin = 10.0f * s->agent.radius;
	d.bounds_min = (orca_vec2){lo.x - margin, lo.y - margin};
	d.bounds_max = (orca_vec2){hi.x + margin, hi.y + margin};
	d.agent_radius = s->agent.radius;
	d.path_budget = 0;
	d.tile_budget = 0;
	return d;
}

int scenario_navigate(const scenario *s, orca_world *w, const orca_agent_id *ids, orca_nav **out)
{
	const orca_nav_def d = scenario_nav_def(s);
	orca_nav *nav;
	int rc = orca_nav_create(&d, w, &nav);
	if (rc != ORCA_OK)
		return rc;
	for (uint32_t i = 0; i < s->agent_count; ++i) {
		rc = orca_nav_set_target(nav, ids[i], s->goal[i]);
		if (rc != ORCA_OK) {
			orca_nav_destroy(nav);
			return rc;
		}
	}
	*out = nav;
	return ORCA_OK;
}
