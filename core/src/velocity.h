/* velocity.h — the velocity stage (velocity.c): each agent's new velocity,
 * RVO2's computeNewVelocity, as a pool task over the tree order. */
#ifndef ORCA_VELOCITY_H
#define ORCA_VELOCITY_H

#include <stdint.h>

/* ctx is the world; begin, end: tree indices. */
void orca_compute_velocities(void *ctx, uint32_t begin, uint32_t end, int worker);

#endif /* ORCA_VELOCITY_H */
