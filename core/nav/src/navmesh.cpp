// navmesh.cpp — the thin C++ shim over Recast/Detour (Debian's librecast):
// builds one tile of the navigation mesh from the obstacles that touch it,
// answers nearest-point and path queries, and wraps dtPathCorridor. Nothing
// here keeps agent state or decides anything; nav_*.c do. Built with
// -ffp-contract=off like every file the step depends on.
#include "navmesh.h"

#include <algorithm>
#include <climits>
#include <cmath> // sqrtf only
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include <recastnavigation/DetourCommon.h>
#include <recastnavigation/DetourNavMesh.h>
#include <recastnavigation/DetourNavMeshBuilder.h>
#include <recastnavigation/DetourNavMeshQuery.h>
#include <recastnavigation/DetourNode.h>
#include <recastnavigation/DetourPathCorridor.h>
#include <recastnavigation/Recast.h>

namespace {

const float kGroundHalfHeight = 1.0f; // the heightfield spans y in [-1, 1]; the ground is y = 0
const unsigned short kWalkFlag = 1;
// Areas kCrowdArea + 1 .. + kCrowdCounts: polygons marked crowded, by how
// many times (Recast's walkable polygons are RC_WALKABLE_AREA, 63).
const unsigned char kCrowdArea = 0;
const int kCrowdCounts = 5;

inline void to3(orca_vec2 p, float out[3])
{
	out[0] = p.x;
	out[1] = 0.0f;
	out[2] = p.y;
}

inline orca_vec2 to2(const float p[3])
{
	orca_vec2 v = {p[0], p[2]};
	return v;
}

// floor and ceil without libm (the house rule: no libm call but sqrtf)
inline int floor_int(float v)
{
	const int i = (int)v;
	return (float)i > v ? i - 1 : i;
}

inline int ceil_int(float v)
{
	const int i = (int)v;
	return (float)i < v ? i + 1 : i;
}

// The largest power of two <= v (v > 0), within [2^-8, 2^8].
inline float pow2_floor(float v)
{
	float p = 1.0f;
	while (p > v && p > 1.0f / 256.0f)
		p *= 0.5f;
	while (p * 2.0f <= v && p < 256.0f)
		p *= 2.0f;
	return p;
}

} // namespace

// Corners steering asks Detour for (see corridor_corners).
enum { kCornersMax = 8 };

// A corridor's buffer holds room for the polygons it has, not for max_path
// of them (max_path is 128 by default, 512 bytes an agent, while most of a
// crowd's corridors are a few polygons). Before each step that can lengthen
// it, it gets room for what that step can add, so no step cuts what a buffer
// of max_path would keep: Detour's merges add at most the 16 polygons a move
// passed through (movePosition) or 31 a shortcut's ray crossed
// (optimizePathVisibility). So a corridor's polygons are the same for any
// capacity, and a save need not keep it.
struct navmesh_corridor {
	dtPathCorridor corridor;
	int capacity = 0;
	int max_path = 0;
};

static const size_t INSIDE_STRIDE = 64 / sizeof(dtPolyRef);

struct navmesh {
	navmesh_params p;
	int tiles_x = 0, tiles_y = 0;
	int tile_cells = 0, border = 0, walkable_radius = 0;
	float tile_world = 0;
	// The tile grid's corner: bounds_min snapped down to a multiple of the
	// cell size (see navmesh_create).
	orca_vec2 origin = {0, 0};
	dtNavMesh *mesh = nullptr;
	dtNavMeshQuery *query = nullptr;
	dtQueryFilter filter;
	dtQueryFilter crowd_filter; // filter, with crowded polygons' costs (navmesh_crowd_mark)
	rcContext ctx{false};
	// component label of each polygon, by Detour tile index then polygon index
	std::vector<std::vector<uint32_t>> component;
	std::vector<dtPolyRef> stack;
	std::vector<dtPolyRef> path; // findPath's output, reused (no allocation per query)
	size_t tile_bytes = 0;
	// polygons in the mesh, counted by navmesh_update_components (which runs
	// after every change of tiles): the server reads it every tick
	uint32_t poly_count = 0;
	// A tile with no obstacle in reach and the world's edge out of reach is
	// all open ground: Recast builds it the same wherever it lies (its
	// vertices are in voxels from the tile's corner). The first one built is
	// kept and every other such tile reuses it, skipping the voxel pipeline.
	bool has_plain = false;
	std::vector<unsigned short> plain_verts, plain_polys, plain_flags;
	std::vector<unsigned char> plain_areas;
	int plain_nverts = 0, plain_npolys = 0, plain_nvp = 0;
	float plain_ymin = 0, plain_ymax = 0;
	uint64_t plain_reused = 0;
	// When each tile position last got a tile (0: never). The order tiles
	// were added decides the order of every polygon's links (Detour prepends
	// a neighbour's links when it is added), and the links' order decides
	// ties in A*: a restore adds tiles again in this order.
	std::vector<uint64_t> added_at;
	uint64_t add_count = 0;
	navmesh_corridor scratch; // a copy to string-pull from without moving the agent's own corridor
	// a query's straight path when it asks for more corners than steering does
	std::vector<float> peek_verts;
	std::vector<unsigned char> peek_flags;
	std::vector<dtPolyRef> peek_polys;
	// Workers 1.. of a parallel update: a query each (Detour's query holds
	// its node pools and is not thread-safe) and a path scratch each;
	// worker 0 is query and path above.
	struct worker_query {
		dtNavMeshQuery *query = nullptr;
		std::vector<dtPolyRef> path;
	};
	std::vector<worker_query> workers;
	// The polygon navmesh_on_mesh tries first, per worker (0 the caller),
	// INSIDE_STRIDE apart: every probe of a visit writes its worker's, and
	// two workers' on one cache line would take the line from each other.
	mutable std::vector<dtPolyRef> inside = std::vector<dtPolyRef>(INSIDE_STRIDE, 0);
	// Polygons marked crowded (navmesh_crowd_mark) and their own area, to
	// put back (navmesh_crowd_clear).
	std::vector<std::pair<dtPolyRef, unsigned char>> crowded;
};

static dtNavMeshQuery *query_of(const navmesh *m, int worker)
{
	return worker > 0 ? m->workers[(size_t)worker - 1].query : m->query;
}

// The polygon navmesh_on_mesh tries first on this worker.
static dtPolyRef &inside_of(const navmesh *m, int worker)
{
	return m->inside[(size_t)worker * INSIDE_STRIDE];
}

static std::vector<dtPolyRef> &path_of(navmesh *m, int worker)
{
	return worker > 0 ? m->workers[(size_t)worker - 1].path : m->path;
}

enum { kCorridorGrain = 16, kMoveAdds = 16, kShortcutAdds = 32, kCorridorStart = 48 };

// Room for `need` polygons (at most max_path), the corridor's polygons kept
// when `keep` (through `saved`, a scratch the caller does not hold). False
// when out of memory: the corridor is then empty (its agent plans again).
static bool corridor_reserve(navmesh_corridor *c, int need, bool keep, std::vector<dtPolyRef> *saved)
{
	if (need > c->max_path)
		need = c->max_path;
	if (need <= c->capacity)
		return true;
	int cap = (need + kCorridorGrain - 1) / kCorridorGrain * kCorridorGrain;
	if (cap > c->max_path)
		cap = c->max_path;
	const int n = keep ? c->corridor.getPathCount() : 0;
	float pos[3], target[3];
	if (n > 0) {
		saved->assign(c->corridor.getPath(), c->corridor.getPath() + n);
		dtVcopy(pos, c->corridor.getPos());
		dtVcopy(target, c->corridor.getTarget());
	}
	// Detour's init takes a buffer once: a new corridor in the old one's place
	c->corridor.~dtPathCorridor();
	new (&c->corridor) dtPathCorridor();
	c->capacity = c->corridor.init(cap) ? cap : 0;
	if (c->capacity == 0)
		return false;
	if (n > 0) {
		c->corridor.reset((*saved)[0], pos);
		c->corridor.setCorridor(target, saved->data(), n); // n < cap: need is above it
	}
	return true;
}

extern "C" int navmesh_create(const navmesh_params *p, navmesh **out)
{
	navmesh *m = new (std::nothrow) navmesh();
	if (!m)
		return ORCA_ERR_NO_MEMORY;
	m->p = *p;
	if (!(p->cell_size > 0.0f) || !(p->bounds_max.x > p->bounds_min.x) || !(p->bounds_max.y > p->bounds_min.y) ||
	    !(p->radius > 0.0f)) {
		delete m;
		return ORCA_ERR_INVALID_ARGUMENT;
	}
	// Same mesh on every CPU. Debian's Recast/Detour are built with the
	// compiler's default contraction, so on arm64 they turn a*b+c into a fused
	// multiply-add (Recast's voxel-to-world conversions, Detour's geometry):
	// a different last bit from x86-64 wherever a*b is inexact. With a
	// power-of-two cell (and cell height) and the grid's corner on a multiple of
	// the cell, every voxel corner is an exact float, a*b+c is exact, fused
	// or not, and the mesh's vertices agree to the bit.
	const float cs = pow2_floor(p->cell_size);
	m->p.cell_size = cs;
	m->origin.x = (float)floor_int(p->bounds_min.x / cs) * cs;
	m->origin.y = (float)floor_int(p->bounds_min.y / cs) * cs;
	const float w = p->bounds_max.x - m->origin.x, h = p->bounds_max.y - m->origin.y;
	// 32-bit polygon refs: tile bits + polygon bits <= 22 (Detour keeps 10 for
	// salt). At most 4,096 tiles (64 per axis) leaves 1,024 polygons per tile.
	int cells = p->tile_cells > 8 ? p->tile_cells : 64;
	const int cells_x = ceil_int(w / cs), cells_y = ceil_int(h / cs);
	while ((cells_x + cells - 1) / cells > 64 || (cells_y + cells - 1) / cells > 64)
		cells *= 2;
	m->tile_cells = cells;
	m->tile_world = (float)cells * cs;
	m->tiles_x = (cells_x + cells - 1) / cells;
	m->tiles_y = (cells_y + cells - 1) / cells;
	m->walkable_radius = ceil_int(p->radius / cs);
	m->added_at.assign((size_t)m->tiles_x * (size_t)m->tiles_y, 0);
	m->border = m->walkable_radius + 3;

	int tile_bits = 0;
	while ((1 << tile_bits) < m->tiles_x * m->tiles_y)
		++tile_bits;
	dtNavMeshParams np;
	memset(&np, 0, sizeof np);
	np.orig[0] = m->origin.x;
	np.orig[1] = 0.0f;
	np.orig[2] = m->origin.y;
	np.tileWidth = m->tile_world;
	np.tileHeight = m->tile_world;
	np.maxTiles = m->tiles_x * m->tiles_y;
	np.maxPolys = 1 << (22 - tile_bits);
	m->mesh = dtAllocNavMesh();
	m->query = dtAllocNavMeshQuery();
	if (!m->mesh || !m->query || dtStatusFailed(m->mesh->init(&np)) ||
	    dtStatusFailed(m->query->init(m->mesh, p->max_nodes > 0 ? p->max_nodes : 8192))) {
		navmesh_destroy(m);
		return ORCA_ERR_NO_MEMORY;
	}
	m->filter.setIncludeFlags(kWalkFlag);
	m->filter.setExcludeFlags(0);
	// Crowded polygons cost more per metre (area kCrowdArea + the number of
	// stalled agents in them): 1 agent 1, 2 agents 2, 3 or 4 agents 4, more
	// 8. Powers of two: d * cost is exact, so a fused multiply-add in
	// Detour's A* gives the same bits as separate ones (x86-64 and arm64).
	m->crowd_filter = m->filter;
	for (int count = 1; count <= kCrowdCounts; ++count)
		m->crowd_filter.setAreaCost(kCrowdArea + count,
		                            count <= 1 ? 1.0f : count == 2 ? 2.0f : count <= 4 ? 4.0f : 8.0f);
	*out = m;
	return ORCA_OK;
}

extern "C" int navmesh_set_workers(navmesh *m, int workers)
{
	if (workers < 1)
		return ORCA_ERR_INVALID_ARGUMENT;
	for (int i = (int)m->workers.size() + 1; i < workers; ++i) {
		navmesh::worker_query q;
		q.query = dtAllocNavMeshQuery();
		if (!q.query || dtStatusFailed(q.query->init(m->mesh, m->p.max_nodes > 0 ? m->p.max_nodes : 8192))) {
			dtFreeNavMeshQuery(q.query);
			return ORCA_ERR_NO_MEMORY;
		}
		m->workers.push_back(std::move(q));
	}
	if (m->inside.size() < (size_t)workers * INSIDE_STRIDE)
		m->inside.resize((size_t)workers * INSIDE_STRIDE, 0);
	return ORCA_OK;
}

extern "C" void navmesh_destroy(navmesh *m)
{
	if (!m)
		return;
	for (navmesh::worker_query &q : m->workers)
		dtFreeNavMeshQuery(q.query);
	dtFreeNavMeshQuery(m->query);
	dtFreeNavMesh(m->mesh);
	delete m;
}

extern "C" void navmesh_tile_grid(const navmesh *m, int *tiles_x, int *tiles_y)
{
	*tiles_x = m->tiles_x;
	*tiles_y = m->tiles_y;
}

extern "C" void navmesh_tile_read_rect(const navmesh *m, int tx, int ty, orca_vec2 *lo, orca_vec2 *hi)
{
	const float pad = (float)m->border * m->p.cell_size;
	lo->x = m->origin.x + (float)tx * m->tile_world - pad;
	lo->y = m->origin.y + (float)ty * m->tile_world - pad;
	hi->x = m->origin.x + (float)(tx + 1) * m->tile_world + pad;
	hi->y = m->origin.y + (float)(ty + 1) * m->tile_world + pad;
}

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

extern "C" void navmesh_tiles_touching(const navmesh *m, orca_vec2 lo, orca_vec2 hi, int *x0, int *y0, int *x1,
                                       int *y1)
{
	const float pad = (float)m->border * m->p.cell_size + m->p.cell_size;
	*x0 = clampi(floor_int((lo.x - pad - m->origin.x) / m->tile_world), 0, m->tiles_x - 1);
	*y0 = clampi(floor_int((lo.y - pad - m->origin.y) / m->tile_world), 0, m->tiles_y - 1);
	*x1 = clampi(floor_int((hi.x + pad - m->origin.x) / m->tile_world), 0, m->tiles_x - 1);
	*y1 = clampi(floor_int((hi.y + pad - m->origin.y) / m->tile_world), 0, m->tiles_y - 1);
}

// Mark a thin quad along each obstacle edge: a segment (2 vertices) or a
// sliver thinner than a cell holds no cell centre of its own, so the polygon
// test alone would miss it.
static void mark_edges(navmesh *m, const navmesh_obstacle *o, rcCompactHeightfield &chf)
{
	const float half = 0.75f * m->p.cell_size;
	const uint32_t n = o->count;
	const uint32_t edges = n == 2 ? 1 : n;
	for (uint32_t i = 0; i < edges; ++i) {
		const orca_vec2 a = o->vertices[i], b = o->vertices[(i + 1) % n];
		float dx = b.x - a.x, dy = b.y - a.y;
		const float len = sqrtf(dx * dx + dy * dy);
		if (!(len > 0.0f))
			continue;
		dx = dx / len * half;
		dy = dy / len * half;
		// counter-clockwise quad around the edge, extended by half at both ends
		const float q[12] = {a.x - dx + dy, 0.0f, a.y - dy - dx, b.x + dx + dy, 0.0f, b.y + dy - dx,
		                     b.x + dx - dy, 0.0f, b.y + dy + dx, a.x - dx - dy, 0.0f, a.y - dy + dx};
		rcMarkConvexPolyArea(&m->ctx, q, 4, -kGroundHalfHeight, kGroundHalfHeight, RC_NULL_AREA, chf);
	}
}

// Add tile data (Detour frees it with the tile) at position (tx, ty); a
// non-zero ref puts it back at that tile index and salt (a restore).
static int add_tile(navmesh *m, int tx, int ty, unsigned char *data, int size, dtTileRef ref)
{
	if (dtStatusFailed(m->mesh->addTile(data, size, DT_TILE_FREE_DATA, ref, nullptr))) {
		dtFree(data);
		return ORCA_ERR_NO_MEMORY;
	}
	m->tile_bytes += (size_t)size;
	m->added_at[(size_t)ty * (size_t)m->tiles_x + (size_t)tx] = ++m->add_count;
	return ORCA_OK;
}

// Add an open-ground tile from the kept one, with this tile's corner: the
// bounds Recast itself would give it (the heightfield's minus the border).
static int add_plain_tile(navmesh *m, int tx, int ty, const rcConfig &cfg)
{
	const float pad = (float)cfg.borderSize * cfg.cs;
	dtNavMeshCreateParams cp;
	memset(&cp, 0, sizeof cp);
	cp.verts = m->plain_verts.data();
	cp.vertCount = m->plain_nverts;
	cp.polys = m->plain_polys.data();
	cp.polyAreas = m->plain_areas.data();
	cp.polyFlags = m->plain_flags.data();
	cp.polyCount = m->plain_npolys;
	cp.nvp = m->plain_nvp;
	cp.walkableHeight = (float)cfg.walkableHeight * cfg.ch;
	cp.walkableRadius = m->p.radius;
	cp.walkableClimb = (float)cfg.walkableClimb * cfg.ch;
	cp.tileX = tx;
	cp.tileY = ty;
	cp.bmin[0] = cfg.bmin[0] + pad;
	cp.bmin[1] = m->plain_ymin;
	cp.bmin[2] = cfg.bmin[2] + pad;
	cp.bmax[0] = cfg.bmax[0] - pad;
	cp.bmax[1] = m->plain_ymax;
	cp.bmax[2] = cfg.bmax[2] - pad;
	cp.cs = cfg.cs;
	cp.ch = cfg.ch;
	cp.buildBvTree = true;
	unsigned char *data = nullptr;
	int size = 0;
	if (!dtCreateNavMeshData(&cp, &data, &size))
		return ORCA_ERR_NO_MEMORY;
	const int rc = add_tile(m, tx, ty, data, size, 0);
	m->plain_reused += rc == ORCA_OK;
	return rc;
}

extern "C" int navmesh_build_tile(navmesh *m, int tx, int ty, const navmesh_obstacle *obstacles, uint32_t count)
{
	const float cs = m->p.cell_size;
	rcConfig cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.cs = cs;
	cfg.ch = 0.125f; // a power of two: vertex heights exact (see navmesh_create)
	cfg.walkableSlopeAngle = 45.0f;
	cfg.walkableHeight = 4;
	cfg.walkableClimb = 1;
	cfg.walkableRadius = m->walkable_radius;
	cfg.maxEdgeLen = 0;
	cfg.maxSimplificationError = 0.9f;
	cfg.minRegionArea = 4;
	cfg.mergeRegionArea = 400;
	cfg.maxVertsPerPoly = DT_VERTS_PER_POLYGON;
	cfg.tileSize = m->tile_cells;
	cfg.borderSize = m->border;
	cfg.width = cfg.tileSize + 2 * cfg.borderSize;
	cfg.height = cfg.tileSize + 2 * cfg.borderSize;
	orca_vec2 lo, hi;
	navmesh_tile_read_rect(m, tx, ty, &lo, &hi);
	cfg.bmin[0] = lo.x;
	cfg.bmin[1] = -kGroundHalfHeight;
	cfg.bmin[2] = lo.y;
	cfg.bmax[0] = hi.x;
	cfg.bmax[1] = kGroundHalfHeight;
	cfg.bmax[2] = hi.y;

	// the tile's previous polygons go first: a failed build leaves a hole, not stale walls
	const dtTileRef old = m->mesh->getTileRefAt(tx, ty, 0);
	if (old) {
		const dtMeshTile *t = m->mesh->getTileByRef(old);
		if (t)
			m->tile_bytes -= (size_t)t->dataSize;
		m->mesh->removeTile(old, nullptr, nullptr);
	}

	const bool plain = count == 0 && lo.x >= m->p.bounds_min.x && lo.y >= m->p.bounds_min.y &&
	                   hi.x <= m->p.bounds_max.x && hi.y <= m->p.bounds_max.y;
	if (plain && m->has_plain)
		return add_plain_tile(m, tx, ty, cfg);

	int rc = ORCA_ERR_NO_MEMORY;
	rcHeightfield *hf = rcAllocHeightfield();
	rcCompactHeightfield *chf = rcAllocCompactHeightfield();
	rcContourSet *cset = rcAllocContourSet();
	rcPolyMesh *pm = rcAllocPolyMesh();
	unsigned char *data = nullptr;
	int data_size = 0;
	if (!hf || !chf || !cset || !pm)
		goto done;
	if (!rcCreateHeightfield(&m->ctx, *hf, cfg.width, cfg.height, cfg.bmin, cfg.bmax, cfg.cs, cfg.ch))
		goto done;
	{
		// the ground: the world rectangle, two triangles, clipped to the tile by Recast
		const orca_vec2 a = m->p.bounds_min, b = m->p.bounds_max;
		const float ground[12] = {a.x, 0.0f, a.y, a.x, 0.0f, b.y, b.x, 0.0f, b.y, b.x, 0.0f, a.y};
		const int tris[6] = {0, 1, 2, 0, 2, 3};
		const unsigned char areas[2] = {RC_WALKABLE_AREA, RC_WALKABLE_AREA};
		if (!rcRasterizeTriangles(&m->ctx, ground, 4, tris, areas, 2, *hf, cfg.walkableClimb))
			goto done;
	}
	if (!rcBuildCompactHeightfield(&m->ctx, cfg.walkableHeight, cfg.walkableClimb, *hf, *chf))
		goto done;
	{
		std::vector<float> v3;
		for (uint32_t i = 0; i < count; ++i) {
			const navmesh_obstacle *o = &obstacles[i];
			if (o->count >= 3) {
				v3.resize((size_t)o->count * 3);
				for (uint32_t k = 0; k < o->count; ++k)
					to3(o->vertices[k], &v3[(size_t)k * 3]);
				rcMarkConvexPolyArea(&m->ctx, v3.data(), (int)o->count, -kGroundHalfHeight, kGroundHalfHeight,
				                     RC_NULL_AREA, *chf);
			}
			mark_edges(m, o, *chf);
		}
	}
	// inflate obstacles and the world's edge by the agent radius
	if (!rcErodeWalkableArea(&m->ctx, cfg.walkableRadius, *chf))
		goto done;
	if (!rcBuildDistanceField(&m->ctx, *chf))
		goto done;
	if (!rcBuildRegions(&m->ctx, *chf, cfg.borderSize, cfg.minRegionArea, cfg.mergeRegionArea))
		goto done;
	if (!rcBuildContours(&m->ctx, *chf, cfg.maxSimplificationError, cfg.maxEdgeLen, *cset))
		goto done;
	if (!rcBuildPolyMesh(&m->ctx, *cset, cfg.maxVertsPerPoly, *pm))
		goto done;
	rc = ORCA_OK;
	if (pm->npolys == 0)
		goto done; // nothing walkable here: no tile
	for (int i = 0; i < pm->npolys; ++i)
		pm->flags[i] = kWalkFlag;
	if (plain) {
		m->plain_nverts = pm->nverts;
		m->plain_npolys = pm->npolys;
		m->plain_nvp = pm->nvp;
		m->plain_verts.assign(pm->verts, pm->verts + (size_t)pm->nverts * 3);
		m->plain_polys.assign(pm->polys, pm->polys + (size_t)pm->npolys * 2 * (size_t)pm->nvp);
		m->plain_flags.assign(pm->flags, pm->flags + pm->npolys);
		m->plain_areas.assign(pm->areas, pm->areas + pm->npolys);
		m->plain_ymin = pm->bmin[1];
		m->plain_ymax = pm->bmax[1];
		m->has_plain = true;
	}
	{
		dtNavMeshCreateParams cp;
		memset(&cp, 0, sizeof cp);
		cp.verts = pm->verts;
		cp.vertCount = pm->nverts;
		cp.polys = pm->polys;
		cp.polyAreas = pm->areas;
		cp.polyFlags = pm->flags;
		cp.polyCount = pm->npolys;
		cp.nvp = pm->nvp;
		cp.walkableHeight = (float)cfg.walkableHeight * cfg.ch;
		cp.walkableRadius = m->p.radius;
		cp.walkableClimb = (float)cfg.walkableClimb * cfg.ch;
		cp.tileX = tx;
		cp.tileY = ty;
		cp.tileLayer = 0;
		rcVcopy(cp.bmin, pm->bmin);
		rcVcopy(cp.bmax, pm->bmax);
		cp.cs = cfg.cs;
		cp.ch = cfg.ch;
		cp.buildBvTree = true;
		rc = ORCA_ERR_NO_MEMORY;
		if (!dtCreateNavMeshData(&cp, &data, &data_size))
			goto done;
		rc = add_tile(m, tx, ty, data, data_size, 0);
	}
done:
	rcFreePolyMesh(pm);
	rcFreeContourSet(cset);
	rcFreeCompactHeightfield(chf);
	rcFreeHeightField(hf);
	return rc;
}

static uint32_t component_of(const navmesh *m, dtPolyRef ref)
{
	if (!m->mesh->isValidPolyRef(ref))
		return 0;
	const unsigned it = m->mesh->decodePolyIdTile(ref), ip = m->mesh->decodePolyIdPoly(ref);
	if (it >= m->component.size() || ip >= m->component[it].size())
		return 0;
	return m->component[it][ip];
}

extern "C" void navmesh_update_components(navmesh *m)
{
	const dtNavMesh *mesh = m->mesh;
	const int max_tiles = mesh->getMaxTiles();
	m->component.resize((size_t)max_tiles);
	m->poly_count = 0;
	for (int i = 0; i < max_tiles; ++i) {
		const dtMeshTile *t = mesh->getTile(i);
		const size_t n = t->header ? (size_t)t->header->polyCount : 0;
		m->poly_count += (uint32_t)n;
		std::vector<uint32_t> &c = m->component[(size_t)i];
		// assign keeps a vector's capacity: each tile would keep room for the
		// most polygons it ever had, and obstacles coming and going at new
		// places would grow this with the world's history, not its mesh. Only
		// tiles whose polygon count changed (rebuilt ones) allocate here.
		if (c.capacity() != n)
			std::vector<uint32_t>(n, 0u).swap(c);
		else
			c.assign(n, 0u);
	}
	uint32_t next = 1;
	for (int i = 0; i < max_tiles; ++i) {
		const dtMeshTile *t = mesh->getTile(i);
		if (!t->header)
			continue;
		const dtPolyRef base = mesh->getPolyRefBase(t);
		for (int k = 0; k < t->header->polyCount; ++k) {
			if (m->component[(size_t)i][(size_t)k])
				continue;
			const uint32_t label = next++;
			m->component[(size_t)i][(size_t)k] = label;
			m->stack.clear();
			m->stack.push_back(base | (dtPolyRef)k);
			while (!m->stack.empty()) {
				const dtPolyRef ref = m->stack.back();
				m->stack.pop_back();
				const dtMeshTile *pt;
				const dtPoly *poly;
				mesh->getTileAndPolyByRefUnsafe(ref, &pt, &poly);
				for (unsigned l = poly->firstLink; l != DT_NULL_LINK; l = pt->links[l].next) {
					const dtPolyRef nb = pt->links[l].ref;
					if (!nb)
						continue;
					const unsigned it = mesh->decodePolyIdTile(nb), ip = mesh->decodePolyIdPoly(nb);
					if (m->component[it][ip])
						continue;
					m->component[it][ip] = label;
					m->stack.push_back(nb);
				}
			}
		}
	}
}

extern "C" uint32_t navmesh_poly_count(const navmesh *m)
{
	return m->poly_count;
}

extern "C" size_t navmesh_memory(const navmesh *m)
{
	size_t bytes = m->tile_bytes + sizeof *m;
	bytes += (size_t)m->mesh->getMaxTiles() * sizeof(dtMeshTile);
	bytes += (size_t)m->p.max_nodes * (sizeof(dtNode) + 2 * sizeof(dtNodeIndex)) * 2 *
	         (1 + m->workers.size()); // queries' node pools
	for (const std::vector<uint32_t> &c : m->component)
		bytes += c.capacity() * sizeof(uint32_t);
	return bytes;
}

// Positions that enter Detour's queries, on a grid (cell / 8: 1/16 by
// default). Detour's geometry on arm64 is fused (see navmesh_create); when
// its inputs are grid points and the mesh's vertices are too, the products
// of coordinate differences it forms (cross products, squared lengths, over
// the ranges a corridor or a shortcut spans) are exact, so fused and unfused
// agree and so do its decisions (which side of an edge, which polygon, which
// corner). Points Detour computes (a position clamped onto a polygon's edge,
// the nearest point on a polygon) are put back on the grid before they are
// used, inside their polygon, so the next query starts from a grid point too.
static float snap(const navmesh *m, float v)
{
	const float q = m->p.cell_size * 0.125f;
	const float k = v / q; // exact: q is a power of two
	if (!(k > -8388608.0f && k < 8388608.0f))
		return v; // beyond float's integer range (not a world coordinate): as is
	const int i = (int)(k < 0.0f ? k - 0.5f : k + 0.5f);
	return (float)i * q;
}

// Inside or on polygon ref's boundary (exact for grid points: the cross
// products of grid differences within a tile fit a float's mantissa).
static bool inside_tile_poly(const dtMeshTile *t, const dtPoly *poly, float x, float z)
{
	const int n = poly->vertCount;
	bool pos = false, neg = false; // either winding
	for (int i = 0, j = n - 1; i < n; j = i++) {
		const float *a = &t->verts[poly->verts[j] * 3], *b = &t->verts[poly->verts[i] * 3];
		const float cross = (b[0] - a[0]) * (z - a[2]) - (b[2] - a[2]) * (x - a[0]);
		pos = pos || cross > 0.0f;
		neg = neg || cross < 0.0f;
	}
	return !(pos && neg);
}

static bool inside_poly(const navmesh *m, dtPolyRef ref, float x, float z)
{
	const dtMeshTile *t;
	const dtPoly *poly;
	return dtStatusSucceed(m->mesh->getTileAndPolyByRef(ref, &t, &poly)) && inside_tile_poly(t, poly, x, z);
}

// Inside a polygon that navmesh_on_mesh's box query could list: ground, and
// passing the filter (Detour's default passFilter: the flags).
static bool inside_walkable_poly(const navmesh *m, dtPolyRef ref, float x, float z)
{
	const dtMeshTile *t;
	const dtPoly *poly;
	return dtStatusSucceed(m->mesh->getTileAndPolyByRef(ref, &t, &poly)) &&
	       poly->getType() == DT_POLYTYPE_GROUND && (poly->flags & m->filter.getIncludeFlags()) != 0 &&
	       (poly->flags & m->filter.getExcludeFlags()) == 0 && inside_tile_poly(t, poly, x, z);
}

// p on the grid: the nearest grid point inside polygon ref, else (a sliver
// with no grid point near p) the nearest grid point.
static void snap_into(const navmesh *m, dtPolyRef ref, float p[3])
{
	const float q = m->p.cell_size * 0.125f;
	const float x = snap(m, p[0]), z = snap(m, p[2]);
	if (x == p[0] && z == p[2])
		return;
	if (ref && !inside_poly(m, ref, x, z)) {
		// the four grid points around p, nearest first
		const float x0 = x <= p[0] ? x : x - q, z0 = z <= p[2] ? z : z - q;
		float best_d = -1.0f, bx = x, bz = z;
		for (int k = 0; k < 4; ++k) {
			const float cx = x0 + (float)(k & 1) * q, cz = z0 + (float)(k >> 1) * q;
			const float dx = cx - p[0], dz = cz - p[2];
			const float d = dx * dx + dz * dz;
			if (inside_poly(m, ref, cx, cz) && (best_d < 0.0f || d < best_d)) {
				best_d = d;
				bx = cx;
				bz = cz;
			}
		}
		p[0] = bx;
		p[2] = bz;
		return;
	}
	p[0] = x;
	p[2] = z;
}

// Nearest polygon to p by 2-D distance, searching a box that grows until the
// best point found lies within it. (Detour's findNearestPoly answers the best
// polygon whose bounds touch its box, which can be farther than one outside.)
static uint32_t component_of(const navmesh *m, dtPolyRef ref);

// component 0: any polygon; else only polygons of that component.
static dtPolyRef nearest_poly(const navmesh *m, orca_vec2 p, float *pt, uint32_t component = 0, int worker = 0)
{
	dtNavMeshQuery *query = query_of(m, worker);
	float c[3];
	to3(p, c);
	c[0] = snap(m, c[0]);
	c[2] = snap(m, c[2]);
	const float world = (m->p.bounds_max.x - m->p.bounds_min.x) + (m->p.bounds_max.y - m->p.bounds_min.y);
	enum { kMaxPolys = 512 };
	dtPolyRef polys[kMaxPolys];
	for (float r = 2.0f * m->p.radius + m->p.cell_size;; r *= 4.0f) {
		const float ext[3] = {r, 2.0f * kGroundHalfHeight, r};
		int n = 0;
		query->queryPolygons(c, ext, &m->filter, polys, &n, kMaxPolys);
		dtPolyRef best = 0;
		float best_d = 0.0f;
		for (int i = 0; i < n; ++i) {
			float q[3];
			bool over = false;
			if (component && component_of(m, polys[i]) != component)
				continue;
			if (dtStatusFailed(query->closestPointOnPoly(polys[i], c, q, &over)))
				continue;
			const float dx = q[0] - c[0], dz = q[2] - c[2];
			const float d = over ? 0.0f : dx * dx + dz * dz;
				if (!best || d < best_d) {
				best = polys[i];
				best_d = d;
				dtVcopy(pt, q);
				if (over)
					pt[1] = 0.0f;
			}
		}
		// a polygon's bounds may reach into the box while its nearest point
		// is outside it: only a point within r is surely the nearest
		if ((best && best_d <= r * r) || r > world) {
			if (best)
				snap_into(m, best, pt);
			return best;
		}
	}
}

extern "C" bool navmesh_nearest(const navmesh *m, orca_vec2 p, orca_vec2 *out)
{
	return navmesh_nearest_on(m, 0, p, out);
}

extern "C" bool navmesh_nearest_on(const navmesh *m, int worker, orca_vec2 p, orca_vec2 *out)
{
	float pt[3];
	const dtPolyRef ref = nearest_poly(m, p, pt, 0, worker);
	if (!ref)
		return false;
	// A point on the mesh answers itself: the grid (see snap) is for what
	// enters Detour's queries, not for this answer to a caller (the test of
	// inside is ours, unfused, the same on every CPU).
	*out = inside_poly(m, ref, p.x, p.y) ? p : to2(pt);
	return true;
}

extern "C" bool navmesh_on_mesh(const navmesh *m, int worker, orca_vec2 p)
{
	// The polygons whose bounds hold p (Detour's box query: quantized bounds,
	// no arithmetic that a fused multiply-add could round otherwise), then our
	// own inside test: the same answer on every CPU. (closestPointOnPoly, as
	// navmesh_nearest uses, rounds differently on arm64 near an edge.)
	//
	// Most points asked about lie in the polygon of the agent being visited
	// (corridor_corners names it) or in the one that held the worker's last
	// point on the mesh (the probes across an agent's way): that polygon
	// first. A walkable polygon holding p is one the box query lists (its
	// bounds are rounded outwards and the ground is y = 0), so the answer is
	// the same either way, but for a point with more than the box query's 16
	// polygons' bounds around it (that query could miss the one holding
	// it). A rebuilt tile's polygons have a new salt, and whatever polygon a
	// reference names now is the one tested.
	dtPolyRef &inside = inside_of(m, worker);
	if (inside && inside_walkable_poly(m, inside, p.x, p.y))
		return true;
	float c[3];
	to3(p, c);
	const float ext[3] = {m->p.cell_size * 0.125f, 2.0f * kGroundHalfHeight, m->p.cell_size * 0.125f};
	enum { kMaxPolys = 16 };
	dtPolyRef polys[kMaxPolys];
	int n = 0;
	query_of(m, worker)->queryPolygons(c, ext, &m->filter, polys, &n, kMaxPolys);
	for (int i = 0; i < n; ++i)
		if (inside_poly(m, polys[i], p.x, p.y)) {
			inside = polys[i];
			return true;
		}
	return false;
}

extern "C" navmesh_corridor *navmesh_corridor_create(int max_path)
{
	navmesh_corridor *c = new (std::nothrow) navmesh_corridor();
	if (!c)
		return nullptr;
	c->max_path = max_path;
	// room for a short corridor and a shortcut, next to the corridor itself:
	// the update's visits, in agent order, then read both from one place
	if (!corridor_reserve(c, kCorridorStart, false, nullptr)) {
		delete c;
		return nullptr;
	}
	return c;
}

extern "C" void navmesh_corridor_destroy(navmesh_corridor *c)
{
	delete c;
}

// A pure function of (mesh, pos, target, path capacity): Detour's findPath
// clears its node pool and open list first (and each node it takes is set
// afresh), findNearestPoly's box query and closestPointOnPoly keep nothing,
// so the answer does not depend on which worker's query gives it, nor on
// what that query answered before.
extern "C" navmesh_plan_result navmesh_plan_find(const navmesh *m, int worker, orca_vec2 pos, orca_vec2 target,
                                                 bool crowded, uint32_t *path_out, int max_path,
                                                 navmesh_plan_answer *a)
{
	const dtQueryFilter *filter = crowded ? &m->crowd_filter : &m->filter;
	static_assert(sizeof(dtPolyRef) == sizeof(uint32_t), "32-bit polygon refs");
	dtNavMeshQuery *query = query_of(m, worker);
	dtPolyRef *path = reinterpret_cast<dtPolyRef *>(path_out);
	float spt[3] = {0, 0, 0}, ept[3] = {0, 0, 0};
	a->path = path_out;
	a->count = 0;
	a->start = 0;
	const dtPolyRef start = nearest_poly(m, pos, spt, 0, worker);
	const dtPolyRef end = start ? nearest_poly(m, target, ept, 0, worker) : 0;
	dtVcopy(a->start_pt, spt);
	if (!start || !end)
		return a->result = NAVMESH_PLAN_FAILED;
	a->start = start;
	int n = 0;
	// dtPathCorridor::setCorridor asserts npath < its capacity: one less
	const int limit = max_path - 1;
	const dtStatus st = query->findPath(start, end, spt, ept, filter, path, &n, limit);
	if (dtStatusFailed(st) || n == 0) {
		a->goal = to2(spt);
		return a->result = NAVMESH_PLAN_UNREACHABLE;
	}
	navmesh_plan_result result = NAVMESH_PLAN_COMPLETE;
	float gpt[3];
	if (path[(size_t)n - 1] == end) {
		dtVcopy(gpt, ept);
	} else if (component_of(m, start) != component_of(m, end)) {
		// no way there: the nearest point of the start's component, and a path to it
		result = NAVMESH_PLAN_UNREACHABLE;
		float npt[3];
		const dtPolyRef near = nearest_poly(m, target, npt, component_of(m, start), worker);
		if (near && dtStatusSucceed(query->findPath(start, near, spt, npt, filter, path, &n, limit)) && n > 0 &&
		    path[(size_t)n - 1] == near) {
			dtVcopy(gpt, npt);
		} else {
			if (n == 0) {
				a->goal = to2(spt);
				return a->result = NAVMESH_PLAN_UNREACHABLE;
			}
			query->closestPointOnPoly(path[(size_t)n - 1], ept, gpt, nullptr);
		}
	} else {
		// the same component but a limit was hit (nodes or corridor length):
		// walk the part found and plan again from its end
		query->closestPointOnPoly(path[(size_t)n - 1], ept, gpt, nullptr);
		result = NAVMESH_PLAN_FAR;
	}
	snap_into(m, path[(size_t)n - 1], gpt);
	dtVcopy(a->end_pt, gpt);
	a->count = n;
	a->goal = to2(gpt);
	return a->result = result;
}

extern "C" void navmesh_plan_apply(navmesh_corridor *c, const navmesh_plan_answer *a)
{
	if (!corridor_reserve(c, a->count + kMoveAdds, false, nullptr))
		return;
	c->corridor.reset(a->start, a->start_pt);
	if (a->count > 0)
		c->corridor.setCorridor(a->end_pt, reinterpret_cast<const dtPolyRef *>(a->path), a->count);
}

extern "C" navmesh_plan_result navmesh_plan(navmesh *m, navmesh_corridor *c, orca_vec2 pos, orca_vec2 target,
                                            bool crowded, orca_vec2 *goal)
{
	if (m->path.size() < (size_t)c->max_path)
		m->path.resize((size_t)c->max_path);
	navmesh_plan_answer a;
	const navmesh_plan_result r = navmesh_plan_find(m, 0, pos, target, crowded, m->path.data(), c->max_path, &a);
	navmesh_plan_apply(c, &a);
	if (r != NAVMESH_PLAN_FAILED)
		*goal = a.goal;
	return r;
}

// Detour 1.5.1's optimizePathVisibility merges the polygons its raycast
// visited (up to 32) into the corridor, and writes past a corridor smaller
// than the merge (dtMergeCorridorStartShortcut: req > maxPath). For such
// small corridors the same raycast is made first, and the shortcut skipped
// when the merge would not fit.
static bool shortcut_fits(navmesh *m, int worker, const dtPathCorridor &pc, int capacity, const float *next,
                          float range)
{
	enum { kMaxRes = 32 };
	if (capacity > kMaxRes)
		return true;
	const float *pos = pc.getPos();
	const float dx = next[0] - pos[0], dz = next[2] - pos[2];
	const float d = sqrtf(dx * dx + dz * dz);
	if (d < 0.01f)
		return true; // Detour does nothing then
	const float reach = d + 0.01f < range ? d + 0.01f : range; // as Detour: overshoot a little, clamp
	const float scale = range / reach;
	const float goal[3] = {pos[0] + dx * scale, pos[1] + (next[1] - pos[1]) * scale, pos[2] + dz * scale};
	dtPolyRef res[kMaxRes];
	float t, norm[3];
	int nres = 0;
	query_of(m, worker)->raycast(pc.getFirstPoly(), pos, goal, &m->filter, &t, norm, res, &nres, kMaxRes);
	const dtPolyRef *path = pc.getPath();
	for (int i = pc.getPathCount() - 1; i >= 0; --i)
		for (int j = nres - 1; j >= 0; --j)
			if (path[i] == res[j])
				return j <= capacity; // the furthest common polygon: the j visited before it go first
	return true;
}

static void corridor_assign(dtPathCorridor &pc, int capacity, const float pos[3], const float target[3],
                            const dtPolyRef *path, int n);

// A corridor that runs back on itself. Detour's movePosition puts the
// polygons an agent was pushed into in front of its corridor, which then
// leads back through the polygon it left, though the new first polygon may
// border one further on (nav_scale: pushed across a tile border, the way led
// back through the tiles' shared corner, and the agent walked to and fro
// there for good; DetourCrowd mends this with a periodic local search). When
// the first polygon links directly to one of the next kLoopLook, the corridor
// goes there straight, to the furthest such one. Only for a stuck agent
// (the caller's mend_loop): cutting every loop locked SteerSuite's symmetric
// concentric-circles solid in reference mode (the loops broke its symmetry).
enum { kLoopLook = 8 };
static void skip_loop(navmesh *m, int worker, dtPathCorridor &pc, int capacity)
{
	const dtPolyRef *path = pc.getPath();
	const int np = pc.getPathCount();
	if (np < 3)
		return;
	const dtMeshTile *t;
	const dtPoly *poly;
	if (dtStatusFailed(m->mesh->getTileAndPolyByRef(path[0], &t, &poly)))
		return;
	const int look = np < kLoopLook ? np : kLoopLook;
	int furthest = 1;
	for (unsigned int l = poly->firstLink; l != DT_NULL_LINK; l = t->links[l].next)
		for (int j = look - 1; j > furthest; --j)
			if (path[j] == t->links[l].ref) {
				furthest = j;
				break;
			}
	if (furthest < 2)
		return;
	std::vector<dtPolyRef> &scratch_path = path_of(m, worker);
	const int kept = 1 + np - furthest;
	if (scratch_path.size() < (size_t)kept)
		scratch_path.resize((size_t)kept);
	scratch_path[0] = path[0];
	memcpy(scratch_path.data() + 1, path + furthest, (size_t)(np - furthest) * sizeof(dtPolyRef));
	float pos[3], target[3];
	dtVcopy(pos, pc.getPos());
	dtVcopy(target, pc.getTarget());
	corridor_assign(pc, capacity, pos, target, scratch_path.data(), kept);
}

// Detour's findCorners(ask) answers at most ask - 1 corners: the first point
// of its straight path is the position itself, which it drops. Steering asks
// for kCornersMax (its shortcut aims at the furthest of them); a query asks for one
// more than it has room for. At most `max` corners are written.
static int corridor_corners(navmesh *m, int worker, navmesh_corridor &c, orca_vec2 pos, bool optimize, bool mend_loop,
                            int ask, orca_vec2 *corners, int max, bool *end_is_last, float *off, orca_vec2 *on_mesh)
{
	dtNavMeshQuery *query = query_of(m, worker);
	std::vector<dtPolyRef> &scratch_path = path_of(m, worker);
	dtPathCorridor &pc = c.corridor;
	*end_is_last = false;
	*off = 0.0f;
	if (pc.getPathCount() == 0)
		return -1;
	float p3[3];
	to3(pos, p3);
	p3[0] = snap(m, p3[0]);
	p3[2] = snap(m, p3[2]);
	if (!corridor_reserve(&c, pc.getPathCount() + kMoveAdds, true, &scratch_path) ||
	    !pc.movePosition(p3, query, &m->filter))
		return -1;
	{
		// a position clamped onto the corridor's edge is Detour's arithmetic:
		// back onto the grid (see snap), inside the first polygon
		float sp[3];
		dtVcopy(sp, pc.getPos());
		snap_into(m, pc.getFirstPoly(), sp);
		if (sp[0] != pc.getPos()[0] || sp[2] != pc.getPos()[2]) {
			const int np = pc.getPathCount();
			if (scratch_path.size() < (size_t)np)
				scratch_path.resize((size_t)np);
			memcpy(scratch_path.data(), pc.getPath(), (size_t)np * sizeof(dtPolyRef));
			float target[3];
			dtVcopy(target, pc.getTarget());
			corridor_assign(pc, c.capacity, sp, target, scratch_path.data(), np); // a full corridor too
		}
	}
	if (mend_loop)
		skip_loop(m, worker, pc, c.capacity);
	const float *cp = pc.getPos();
	*on_mesh = to2(cp);
	const float dx = cp[0] - pos.x, dy = cp[2] - pos.y;
	*off = sqrtf(dx * dx + dy * dy);
	float stack_verts[kCornersMax * 3];
	unsigned char stack_flags[kCornersMax];
	dtPolyRef stack_polys[kCornersMax];
	float *verts = stack_verts;
	unsigned char *flags = stack_flags;
	dtPolyRef *polys = stack_polys;
	if (ask > kCornersMax) {
		// a query's long answer (only queries ask for more; they run alone)
		m->peek_verts.resize((size_t)ask * 3);
		m->peek_flags.resize((size_t)ask);
		m->peek_polys.resize((size_t)ask);
		verts = m->peek_verts.data();
		flags = m->peek_flags.data();
		polys = m->peek_polys.data();
	}
	inside_of(m, worker) = pc.getFirstPoly(); // the agent's own: its visit's probes start around it
	int n = pc.findCorners(verts, flags, polys, ask, query, &m->filter);
	if (optimize && n > 0) {
		// Shortcut toward the furthest corner when it is in view (DetourCrowd's
		// rule: a ray toward it, past it to 30 radii). The ray's end is
		// computed here and put on the grid (see snap), and the range given
		// to Detour is its distance, so Detour's scale range / distance is
		// exactly 1 and the ray ends at that grid point rather than at a
		// product Detour rounds (fused on arm64): the ray grazes the corner's
		// vertex, where one rounding decides the side.
		const float *far = &verts[(n - 1) * 3];
		const float fx = far[0] - cp[0], fz = far[2] - cp[2];
		const float d = sqrtf(fx * fx + fz * fz);
		if (d > 0.02f) {
			const float s = 30.0f * m->p.radius / d;
			float end[3] = {snap(m, cp[0] + fx * s), far[1], snap(m, cp[2] + fz * s)};
			const float ex = end[0] - cp[0], ez = end[2] - cp[2];
			const float range = sqrtf(ex * ex + ez * ez);
			if (range > 0.02f && corridor_reserve(&c, pc.getPathCount() + kShortcutAdds, true, &scratch_path) &&
			    shortcut_fits(m, worker, pc, c.capacity, end, range)) {
				pc.optimizePathVisibility(end, range, query, &m->filter);
				n = pc.findCorners(verts, flags, polys, ask, query, &m->filter);
			}
		}
	}
	if (n > max)
		n = max;
	for (int i = 0; i < n; ++i)
		corners[i] = to2(&verts[i * 3]);
	*end_is_last = n > 0 && (flags[n - 1] & DT_STRAIGHTPATH_END);
	return n;
}

extern "C" int navmesh_corridor_corners(navmesh *m, int worker, navmesh_corridor *c, orca_vec2 pos, bool optimize,
                                        bool mend_loop, orca_vec2 *corners, int max, bool *end_is_last, float *off,
                                        orca_vec2 *on_mesh)
{
	const int ask = max < kCornersMax ? max : kCornersMax;
	return corridor_corners(m, worker, *c, pos, optimize, mend_loop, ask, corners, ask, end_is_last, off, on_mesh);
}

static void corridor_assign(dtPathCorridor &pc, int capacity, const float pos[3], const float target[3],
                            const dtPolyRef *path, int n);

// For a query (GetPaths): string-pull a copy, so that asking never moves the
// agent's corridor (which would change its future).
extern "C" int navmesh_corridor_peek_corners(navmesh *m, const navmesh_corridor *c, orca_vec2 pos,
                                             orca_vec2 *corners, int max, bool *end_is_last, float *off,
                                             orca_vec2 *on_mesh)
{
	const int n = c->corridor.getPathCount();
	*end_is_last = false;
	*off = 0.0f;
	if (n == 0)
		return -1;
	navmesh_corridor &copy = m->scratch;
	copy.max_path = c->max_path;
	if (!corridor_reserve(&copy, c->max_path, false, nullptr))
		return -1;
	corridor_assign(copy.corridor, copy.capacity, c->corridor.getPos(), c->corridor.getTarget(), c->corridor.getPath(),
	                n);
	// a straight path has at most one corner per polygon and its end
	if (max > c->max_path + 1)
		max = c->max_path + 1;
	return corridor_corners(m, 0, copy, pos, false, false, max + 1, corners, max, end_is_last, off, on_mesh);
}

extern "C" bool navmesh_corridor_valid(const navmesh *m, const navmesh_corridor *c)
{
	const dtPolyRef *path = c->corridor.getPath();
	const int n = c->corridor.getPathCount();
	for (int i = 0; i < n; ++i)
		if (!m->mesh->isValidPolyRef(path[i]))
			return false;
	return true;
}

extern "C" int navmesh_corridor_length(const navmesh_corridor *c)
{
	return c->corridor.getPathCount();
}

extern "C" int navmesh_corridor_polygon(const navmesh *m, const navmesh_corridor *c, int i, orca_vec2 *vertices,
                                        int max)
{
	if (i < 0 || i >= c->corridor.getPathCount())
		return 0;
	const dtMeshTile *t;
	const dtPoly *poly;
	if (dtStatusFailed(m->mesh->getTileAndPolyByRef(c->corridor.getPath()[i], &t, &poly)))
		return 0;
	int n = 0;
	for (int k = 0; k < poly->vertCount && n < max; ++k)
		vertices[n++] = to2(&t->verts[poly->verts[k] * 3]);
	return n;
}

extern "C" size_t navmesh_corridor_memory(const navmesh_corridor *c)
{
	return sizeof *c + (size_t)c->capacity * sizeof(dtPolyRef);
}

// ------------------------------------------------------------------ save / restore

// Detour's dtPathCorridor::setCorridor asserts that the path is shorter than
// the corridor's capacity, while a corridor can be full (its merges fill it
// to capacity). Debian builds Detour with its asserts on; this hook, when the
// library has it, quiets that one assert for the one call that needs it.
typedef void(navmesh_assert_func)(const char *, const char *, int);
__attribute__((weak)) void dtAssertFailSetCustom(navmesh_assert_func *f);
__attribute__((weak)) navmesh_assert_func *dtAssertFailGetCustom();

static void ignore_assert(const char *, const char *, int)
{
}

static void corridor_assign(dtPathCorridor &pc, int capacity, const float pos[3], const float target[3],
                            const dtPolyRef *path, int n)
{
	pc.reset(path[0], pos);
	const bool full = n >= capacity && dtAssertFailSetCustom && dtAssertFailGetCustom;
	navmesh_assert_func *before = full ? dtAssertFailGetCustom() : nullptr;
	if (full)
		dtAssertFailSetCustom(ignore_assert);
	pc.setCorridor(target, path, n);
	if (full)
		dtAssertFailSetCustom(before);
}

extern "C" uint32_t navmesh_tile_count(const navmesh *m)
{
	return (uint32_t)m->tiles_x * (uint32_t)m->tiles_y;
}

// Positions of the tiles present, in the order they were last added.
extern "C" uint32_t navmesh_tiles_in_add_order(const navmesh *m, uint32_t *positions)
{
	uint32_t n = 0;
	for (int y = 0; y < m->tiles_y; ++y)
		for (int x = 0; x < m->tiles_x; ++x)
			if (m->mesh->getTileRefAt(x, y, 0))
				positions[n++] = (uint32_t)(y * m->tiles_x + x);
	std::vector<uint64_t> key(m->added_at);
	std::sort(positions, positions + n, [&key](uint32_t a, uint32_t b) { return key[a] < key[b]; });
	return n;
}

extern "C" uint32_t navmesh_tile_ref(const navmesh *m, uint32_t position, const uint8_t **data, uint32_t *size)
{
	const int x = (int)(position % (uint32_t)m->tiles_x), y = (int)(position / (uint32_t)m->tiles_x);
	const dtTileRef ref = m->mesh->getTileRefAt(x, y, 0);
	const dtMeshTile *t = ref ? m->mesh->getTileByRef(ref) : nullptr;
	*data = t ? t->data : nullptr;
	*size = t ? (uint32_t)t->dataSize : 0;
	return (uint32_t)ref;
}

// Tile data from a save: sizes and every index Detour follows checked (the
// checkpoint has a CRC, this is the second line).
extern "C" bool navmesh_tile_data_valid(const navmesh *m, uint32_t position, const uint8_t *bytes, uint32_t size)
{
	if (size < sizeof(dtMeshHeader) || size > (1u << 28) || position >= navmesh_tile_count(m))
		return false;
	std::vector<uint32_t> aligned(size / 4 + 1); // the saved bytes may sit anywhere in the blob
	memcpy(aligned.data(), bytes, size);
	const uint8_t *data = (const uint8_t *)aligned.data();
	const dtMeshHeader *h = (const dtMeshHeader *)data;
	const int lim = 1 << 20;
	if (h->magic != DT_NAVMESH_MAGIC || h->version != DT_NAVMESH_VERSION || h->layer != 0 ||
	    h->x != (int)(position % (uint32_t)m->tiles_x) || h->y != (int)(position / (uint32_t)m->tiles_x) ||
	    h->polyCount < 0 || h->polyCount > lim || h->vertCount < 0 || h->vertCount > lim || h->maxLinkCount < 1 ||
	    h->maxLinkCount > lim || h->detailMeshCount != h->polyCount || h->detailVertCount < 0 ||
	    h->detailVertCount > lim || h->detailTriCount < 0 || h->detailTriCount > lim || h->bvNodeCount < 0 ||
	    h->bvNodeCount > lim || h->offMeshConCount != 0 || h->offMeshBase != h->polyCount)
		return false;
	const size_t header = (size_t)dtAlign4(sizeof(dtMeshHeader));
	const size_t verts = (size_t)dtAlign4((int)sizeof(float) * 3 * h->vertCount);
	const size_t polys = (size_t)dtAlign4((int)sizeof(dtPoly) * h->polyCount);
	const size_t links = (size_t)dtAlign4((int)sizeof(dtLink) * h->maxLinkCount);
	const size_t dmeshes = (size_t)dtAlign4((int)sizeof(dtPolyDetail) * h->detailMeshCount);
	const size_t dverts = (size_t)dtAlign4((int)sizeof(float) * 3 * h->detailVertCount);
	const size_t dtris = (size_t)dtAlign4(4 * h->detailTriCount);
	const size_t bv = (size_t)dtAlign4((int)sizeof(dtBVNode) * h->bvNodeCount);
	if (header + verts + polys + links + dmeshes + dverts + dtris + bv != size)
		return false;
	const dtPoly *poly = (const dtPoly *)(data + header + verts);
	const dtPolyDetail *dm = (const dtPolyDetail *)(data + header + verts + polys + links);
	const unsigned char *tris = data + header + verts + polys + links + dmeshes + dverts;
	const dtBVNode *node = (const dtBVNode *)(data + header + verts + polys + links + dmeshes + dverts + dtris);
	for (int i = 0; i < h->polyCount; ++i) {
		const dtPoly &p = poly[i];
		if (p.vertCount < 3 || p.vertCount > DT_VERTS_PER_POLYGON || p.getType() != DT_POLYTYPE_GROUND)
			return false;
		for (int k = 0; k < p.vertCount; ++k) {
			if (p.verts[k] >= h->vertCount)
				return false;
			if (!(p.neis[k] & DT_EXT_LINK) && p.neis[k] != 0 && p.neis[k] > h->polyCount)
				return false;
		}
		const dtPolyDetail &d = dm[i];
		if ((size_t)d.vertBase + d.vertCount > (size_t)h->detailVertCount ||
		    (size_t)d.triBase + d.triCount > (size_t)h->detailTriCount)
			return false;
		for (int k = 0; k < d.triCount; ++k)
			for (int j = 0; j < 3; ++j)
				if (tris[((size_t)d.triBase + (size_t)k) * 4 + (size_t)j] >= p.vertCount + d.vertCount)
					return false;
	}
	for (int i = 0; i < h->bvNodeCount; ++i) {
		const int v = node[i].i;
		if (v >= 0 ? v >= h->polyCount : (v == INT_MIN || i - v > h->bvNodeCount))
			return false;
	}
	return true;
}

// Put the saved tiles back, in the saved order, each at its saved ref. A
// tile without data is the one this mesh built for that position (its
// obstacles have not changed since): it was built from what the world holds.
extern "C" int navmesh_restore_tiles(navmesh *m, const navmesh_saved_tile *tiles, uint32_t count)
{
	const uint32_t total = navmesh_tile_count(m);
	std::vector<std::vector<uint8_t>> built(total);
	for (uint32_t t = 0; t < total; ++t) {
		const uint8_t *d;
		uint32_t size;
		if (navmesh_tile_ref(m, t, &d, &size))
			built[t].assign(d, d + size);
	}
	for (int i = 0; i < m->mesh->getMaxTiles(); ++i) {
		const dtMeshTile *t = static_cast<const dtNavMesh *>(m->mesh)->getTile(i);
		if (t->header)
			m->mesh->removeTile(m->mesh->getTileRef(t), nullptr, nullptr);
	}
	m->tile_bytes = 0;
	std::fill(m->added_at.begin(), m->added_at.end(), 0);
	m->add_count = 0;
	int rc = ORCA_OK;
	for (uint32_t i = 0; i < count && rc == ORCA_OK; ++i) {
		const navmesh_saved_tile &s = tiles[i];
		const uint8_t *src = s.data;
		uint32_t size = s.size;
		if (!src) {
			if (s.position >= total || built[s.position].empty()) {
				rc = ORCA_ERR_INVALID_ARGUMENT; // the world no longer gives this tile
				break;
			}
			src = built[s.position].data();
			size = (uint32_t)built[s.position].size();
		}
		unsigned char *data = (unsigned char *)dtAlloc((int)size, DT_ALLOC_PERM);
		if (!data) {
			rc = ORCA_ERR_NO_MEMORY;
			break;
		}
		memcpy(data, src, size);
		const int x = (int)(s.position % (uint32_t)m->tiles_x), y = (int)(s.position / (uint32_t)m->tiles_x);
		if (add_tile(m, x, y, data, (int)size, (dtTileRef)s.ref) != ORCA_OK)
			rc = ORCA_ERR_INVALID_ARGUMENT; // that tile index is taken, or out of range
	}
	navmesh_update_components(m);
	return rc;
}

extern "C" uint32_t navmesh_corridor_first(const navmesh_corridor *c)
{
	return c->corridor.getPathCount() > 0 ? c->corridor.getFirstPoly() : 0;
}

extern "C" void navmesh_crowd_mark(navmesh *m, uint32_t ref, uint32_t marks)
{
	unsigned char area = 0;
	if (ref == 0 || marks == 0 || dtStatusFailed(m->mesh->getPolyArea(ref, &area)))
		return;
	// as `marks` single marks: the first of an unmarked polygon makes it 1,
	// each one after adds 1, up to kCrowdCounts
	const uint32_t counts = (uint32_t)kCrowdCounts, top = kCrowdArea + counts;
	if (area > top) {
		m->crowded.emplace_back(ref, area);
		m->mesh->setPolyArea(ref, (unsigned char)(kCrowdArea + (marks < counts ? marks : counts)));
	} else if (area < top) {
		m->mesh->setPolyArea(ref, (unsigned char)(top - area > marks ? area + marks : top));
	}
}

extern "C" void navmesh_crowd_clear(navmesh *m)
{
	for (const auto &c : m->crowded)
		m->mesh->setPolyArea(c.first, c.second);
	m->crowded.clear();
}

extern "C" int navmesh_corridor_state(const navmesh_corridor *c, float pos[3], float target[3], const uint32_t **path)
{
	static_assert(sizeof(dtPolyRef) == sizeof(uint32_t), "32-bit polygon refs");
	dtVcopy(pos, c->corridor.getPos());
	dtVcopy(target, c->corridor.getTarget());
	*path = c->corridor.getPath();
	return c->corridor.getPathCount();
}

extern "C" int navmesh_corridor_restore(navmesh_corridor *c, const float pos[3], const float target[3],
                                        const uint32_t *path, int n)
{
	if (n < 0 || n > c->max_path)
		return ORCA_ERR_INVALID_ARGUMENT;
	if (n == 0)
		return c->corridor.getPathCount() == 0 ? ORCA_OK : ORCA_ERR_INVALID_ARGUMENT; /* a fresh one: never planned */
	if (!corridor_reserve(c, n + kMoveAdds, false, nullptr))
		return ORCA_ERR_NO_MEMORY;
	corridor_assign(c->corridor, c->capacity, pos, target, path, n);
	return ORCA_OK;
}
