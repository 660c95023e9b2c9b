/* agent_lines_impl.h — the agent ORCA lines' SIMD body, included by
 * velocity.c once per instruction set: AL_AVX 0 builds it for SSE2, four
 * neighbours a lane each, as agent_lines_sse; AL_AVX 1 for AVX, eight, as
 * agent_lines_avx (velocity.c compiles that copy with the AVX target). The
 * V_* names below stand for the instruction set's intrinsics. Not a header
 * to include elsewhere.
 *
 * Every lane performs exactly the scalar operations of its branch (SSE and
 * AVX arithmetic, division and square root round like their scalar forms:
 * IEEE, the same MXCSR, no FMA), all branches are computed and the right one
 * is selected, so both copies write the same bits as the scalar loop. The
 * cut-off circle of time tau and the collision case share one formula with a
 * different 1/tau, as in RVO2. A short last block repeats its first
 * neighbour in the lanes past the last (computed, never stored). */

#if AL_AVX
#define AL_W 8u
#define AL_FN(name) name##_avx
#define al_v __m256
#define V_SET1 _mm256_set1_ps
#define V_ZERO _mm256_setzero_ps
#define V_ALL() _mm256_castsi256_ps(_mm256_set1_epi32(-1))
#define V_ADD _mm256_add_ps
#define V_SUB _mm256_sub_ps
#define V_MUL _mm256_mul_ps
#define V_DIV _mm256_div_ps
#define V_SQRT _mm256_sqrt_ps
#define V_AND _mm256_and_ps
#define V_OR _mm256_or_ps
#define V_ANDNOT _mm256_andnot_ps
#define V_XOR _mm256_xor_ps
#define V_GT(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define V_LT(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define V_EQ(a, b) _mm256_cmp_ps(a, b, _CMP_EQ_OQ)
#define V_LOADU _mm256_loadu_ps
#define V_STOREU _mm256_storeu_ps
#define V_MOVEMASK _mm256_movemask_ps
#else
#define AL_W 4u
#define AL_FN(name) name##_sse
#define al_v __m128
#define V_SET1 _mm_set1_ps
#define V_ZERO _mm_setzero_ps
#define V_ALL() _mm_castsi128_ps(_mm_set1_epi32(-1))
#define V_ADD _mm_add_ps
#define V_SUB _mm_sub_ps
#define V_MUL _mm_mul_ps
#define V_DIV _mm_div_ps
#define V_SQRT _mm_sqrt_ps
#define V_AND _mm_and_ps
#define V_OR _mm_or_ps
#define V_ANDNOT _mm_andnot_ps
#define V_XOR _mm_xor_ps
#define V_GT _mm_cmpgt_ps
#define V_LT _mm_cmplt_ps
#define V_EQ _mm_cmpeq_ps
#define V_LOADU _mm_loadu_ps
#define V_STOREU _mm_storeu_ps
#define V_MOVEMASK _mm_movemask_ps
#endif

/* mask ? a : b per lane (bitwise: a blendv on comparison masks makes GCC
 * split the masks into integer lanes without AVX2) */
static inline al_v AL_FN(blend)(al_v mask, al_v a, al_v b) { return V_OR(V_AND(mask, a), V_ANDNOT(mask, b)); }

/* The lanes' neighbours: each one's (x, y, vx, vy) row and its radius,
 * transposed into one vector per field. */
static inline void AL_FN(load_lanes)(const tree_agent *ta, const nb_entry *e, al_v *px, al_v *py, al_v *ovx, al_v *ovy,
                                     al_v *orad)
{
#if AL_AVX
	const tree_agent *a0 = &ta[e[0].index], *a1 = &ta[e[1].index], *a2 = &ta[e[2].index];
	const tree_agent *a3 = &ta[e[3].index], *a4 = &ta[e[4].index], *a5 = &ta[e[5].index];
	const tree_agent *a6 = &ta[e[6].index], *a7 = &ta[e[7].index];
	/* rows of four floats from lo (lanes 0-3) and hi (lanes 4-7) */
#define ROWS8(lo, hi) _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(lo)), _mm_loadu_ps(hi), 1)
	const __m256 r0 = ROWS8(&a0->x, &a4->x), r1 = ROWS8(&a1->x, &a5->x);
	const __m256 r2 = ROWS8(&a2->x, &a6->x), r3 = ROWS8(&a3->x, &a7->x);
	const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpacklo_ps(r2, r3);
	const __m256 t2 = _mm256_unpackhi_ps(r0, r1), t3 = _mm256_unpackhi_ps(r2, r3);
	*px = _mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(1, 0, 1, 0));
	*py = _mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 2, 3, 2));
	*ovx = _mm256_shuffle_ps(t2, t3, _MM_SHUFFLE(1, 0, 1, 0));
	*ovy = _mm256_shuffle_ps(t2, t3, _MM_SHUFFLE(3, 2, 3, 2));
	const __m256 s0 = ROWS8(&a0->radius, &a4->radius), s1 = ROWS8(&a1->radius, &a5->radius);
	const __m256 s2 = ROWS8(&a2->radius, &a6->radius), s3 = ROWS8(&a3->radius, &a7->radius);
#undef ROWS8
	*orad = _mm256_shuffle_ps(_mm256_unpacklo_ps(s0, s1), _mm256_unpacklo_ps(s2, s3), _MM_SHUFFLE(1, 0, 1, 0));
#else
	const tree_agent *a0 = &ta[e[0].index], *a1 = &ta[e[1].index], *a2 = &ta[e[2].index];
	const tree_agent *a3 = &ta[e[3].index];
	__m128 r0 = _mm_loadu_ps(&a0->x), r1 = _mm_loadu_ps(&a1->x), r2 = _mm_loadu_ps(&a2->x);
	__m128 r3 = _mm_loadu_ps(&a3->x);
	__m128 s0 = _mm_loadu_ps(&a0->radius), s1 = _mm_loadu_ps(&a1->radius), s2 = _mm_loadu_ps(&a2->radius);
	__m128 s3 = _mm_loadu_ps(&a3->radius);
	_MM_TRANSPOSE4_PS(r0, r1, r2, r3);
	_MM_TRANSPOSE4_PS(s0, s1, s2, s3);
	*px = r0, *py = r1, *ovx = r2, *ovy = r3, *orad = s0;
#endif
}

/* The lanes' neighbours' follow-rule inputs (quality.h, QF_*): each one's
 * row of w->q_follow, transposed into one vector per field. */
static inline void AL_FN(load_follow_lanes)(const float *q_follow, const nb_entry *e, al_v *bx, al_v *by, al_v *bgx,
                                            al_v *bgy)
{
#define ROW(l) (q_follow + QF_STRIDE * (size_t)e[l].index)
#if AL_AVX
#define ROWS8(lo, hi) _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(lo)), _mm_loadu_ps(hi), 1)
	const __m256 r0 = ROWS8(ROW(0), ROW(4)), r1 = ROWS8(ROW(1), ROW(5));
	const __m256 r2 = ROWS8(ROW(2), ROW(6)), r3 = ROWS8(ROW(3), ROW(7));
#undef ROWS8
	const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpacklo_ps(r2, r3);
	const __m256 t2 = _mm256_unpackhi_ps(r0, r1), t3 = _mm256_unpackhi_ps(r2, r3);
	*bx = _mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(1, 0, 1, 0));
	*by = _mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 2, 3, 2));
	*bgx = _mm256_shuffle_ps(t2, t3, _MM_SHUFFLE(1, 0, 1, 0));
	*bgy = _mm256_shuffle_ps(t2, t3, _MM_SHUFFLE(3, 2, 3, 2));
#else
	__m128 r0 = _mm_loadu_ps(ROW(0)), r1 = _mm_loadu_ps(ROW(1)), r2 = _mm_loadu_ps(ROW(2)), r3 = _mm_loadu_ps(ROW(3));
	_MM_TRANSPOSE4_PS(r0, r1, r2, r3);
	*bx = r0, *by = r1, *bgx = r2, *bgy = r3;
#endif
#undef ROW
}

/* Self's follow-rule inputs, one vector each (quality.h, quality_follow). */
typedef struct AL_FN(follow_self) {
	al_v ax, ay, a_sq, agx, agy, a_left, ppx, ppy;
} AL_FN(follow_self);

/* The follow rules' shares for the lanes (quality.h, quality_follow's
 * operations lane by lane): self's inputs, the neighbours' positions (px,
 * py), offsets (rpx, rpy) and squared distances, which lanes are of self's
 * rank (equal), and each lane's share by rank (by_rank, kept where no rule
 * applies). */
static inline al_v AL_FN(follow_shares)(const float *q_follow, const nb_entry *e, const AL_FN(follow_self) * a, al_v px,
                                        al_v py, al_v rpx, al_v rpy, al_v dist_sq, al_v equal, al_v by_rank)
{
	const al_v zero = V_ZERO();
	al_v bx, by, bgx, bgy;
	AL_FN(load_follow_lanes)(q_follow, e, &bx, &by, &bgx, &bgy);
	const al_v blx = V_SUB(bgx, px), bly = V_SUB(bgy, py);
	const al_v b_left = V_ADD(V_MUL(blx, blx), V_MUL(bly, bly));
	const al_v one_point = V_AND(V_EQ(a->agx, bgx), V_EQ(a->agy, bgy));
	/* let them out first: b leaving a's target, a leaving b's */
	const al_v box = V_SUB(px, a->agx), boy = V_SUB(py, a->agy);
	const al_v aox = V_SUB(a->ppx, bgx), aoy = V_SUB(a->ppy, bgy);
	const al_v bo_sq = V_ADD(V_MUL(box, box), V_MUL(boy, boy)), ao_sq = V_ADD(V_MUL(aox, aox), V_MUL(aoy, aoy));
	const al_v near = V_SET1(QF_LET_OUT_NEAR_SQ);
	const al_v a_waits = V_AND(V_AND(V_LT(bo_sq, a->a_left), V_LT(bo_sq, near)),
	                           V_GT(V_ADD(V_MUL(bx, box), V_MUL(by, boy)), zero));
	const al_v b_waits = V_AND(V_AND(V_LT(ao_sq, b_left), V_LT(ao_sq, near)),
	                           V_GT(V_ADD(V_MUL(a->ax, aox), V_MUL(a->ay, aoy)), zero));
	const al_v let_out = V_XOR(a_waits, b_waits);
	/* walking the same way */
	const al_v dot = V_ADD(V_MUL(a->ax, bx), V_MUL(a->ay, by));
	const al_v b_sq = V_ADD(V_MUL(bx, bx), V_MUL(by, by));
	const al_v along =
	    V_AND(V_GT(dot, zero), V_GT(V_MUL(dot, dot), V_MUL(V_SET1(QF_ALONG_COS_SQ), V_MUL(a->a_sq, b_sq))));
	const al_v sdx = V_ADD(a->ax, bx), sdy = V_ADD(a->ay, by);
	const al_v ahead = V_ADD(V_MUL(rpx, sdx), V_MUL(rpy, sdy));
	const al_v in_line =
	    V_GT(V_MUL(ahead, ahead), V_MUL(V_SET1(QF_AHEAD_COS_SQ), V_MUL(dist_sq, V_ADD(V_MUL(sdx, sdx), V_MUL(sdy, sdy)))));
	const al_v b_nearer = V_LT(b_left, a->a_left), a_nearer = V_LT(a->a_left, b_left);
	const al_v behind = AL_FN(blend)(one_point, b_nearer, AL_FN(blend)(let_out, a_waits, V_GT(ahead, zero)));
	const al_v ordered = AL_FN(blend)(behind, b_nearer, a_nearer);
	const al_v rule = AL_FN(blend)(one_point, ordered, V_OR(let_out, V_AND(V_AND(along, in_line), ordered)));
	const al_v use = V_AND(equal, rule);
	const al_v follow = AL_FN(blend)(behind, V_SET1(ORCA_Q_YIELD_SHARE), V_SET1(1.0f - ORCA_Q_YIELD_SHARE));
	return AL_FN(blend)(use, follow, by_rank);
}

/* Coincident agents: no direction in the formula, pick one (lanes in `stuck`).
 * Out of line: rare, and its indices would otherwise stay live in the loop. */
static __attribute__((noinline, cold)) void AL_FN(separate_lanes)(uint32_t self, const nb_entry *e, unsigned stuck,
                                                                   al_v *ux, al_v *uy)
{
	float sx[AL_W], sy[AL_W];
	V_STOREU(sx, *ux);
	V_STOREU(sy, *uy);
	for (uint32_t l = 0; l < AL_W; ++l) {
		if (stuck & (1u << l)) {
			const vec2 d = separation_direction(self, e[l].index);
			sx[l] = d.x;
			sy[l] = d.y;
		}
	}
	*ux = V_LOADU(sx);
	*uy = V_LOADU(sy);
}

/* One line per agent neighbour (RVO2's loop in agent_lines_scalar), AL_W
 * neighbours at a time. */
static uint32_t AL_FN(agent_lines)(const struct orca_world *w, uint32_t self, const nb_entry *nb, uint32_t agent_count,
                                   const self_params *p, vec2 position, vec2 velocity, float inv_time_horizon,
                                   float inv_time_step, const orca_lines *lines, uint32_t n)
{
	const tree_agent *ta = w->tagent;
	const al_v zero = V_ZERO(), sign = V_SET1(-0.0f), one = V_SET1(1.0f), all = V_ALL();
	const al_v ppx = V_SET1(position.x), ppy = V_SET1(position.y);
	const al_v vx = V_SET1(velocity.x), vy = V_SET1(velocity.y);
	const al_v radius = V_SET1(p->radius);
	const al_v inv_th = V_SET1(inv_time_horizon), inv_dt = V_SET1(inv_time_step);

	const bool quality = w->avoidance == ORCA_AVOIDANCE_QUALITY;
	const bool follow = quality && w->q_follow_now;
	const bool uniform = w->uniform_share && !(quality && (w->q_any_rank || follow));
	const float *q_follow = quality ? w->q_follow : NULL;
	const uint8_t rank_self = quality ? w->q_rank[self] : 0;
	const al_v half = V_SET1(0.5f);
	static const float no_row[QF_STRIDE] = {0.0f, 0.0f, 0.0f, 0.0f};
	const float *a = follow ? &q_follow[QF_STRIDE * (size_t)self] : no_row;
	const float alx = a[QF_GX] - position.x, aly = a[QF_GY] - position.y;
	const al_v fax = V_SET1(a[QF_PVX]), fay = V_SET1(a[QF_PVY]);
	const AL_FN(follow_self) fs = {fax, fay, V_ADD(V_MUL(fax, fax), V_MUL(fay, fay)), V_SET1(a[QF_GX]), V_SET1(a[QF_GY]),
	                               V_SET1(alx * alx + aly * aly), ppx, ppy};
	for (uint32_t b = 0; b < agent_count; b += AL_W) {
		const uint32_t lanes = agent_count - b < AL_W ? agent_count - b : AL_W;
		const nb_entry *e = nb + b;
		nb_entry tail[AL_W];
		if (lanes < AL_W) {
			for (uint32_t l = 0; l < AL_W; ++l)
				tail[l] = e[l < lanes ? l : 0];
			e = tail;
		}
		al_v px, py, ovx, ovy, orad;
		AL_FN(load_lanes)(ta, e, &px, &py, &ovx, &ovy, &orad);
		const al_v rpx = V_SUB(px, ppx), rpy = V_SUB(py, ppy);
		const al_v rvx = V_SUB(vx, ovx), rvy = V_SUB(vy, ovy);
		const al_v dist_sq = V_ADD(V_MUL(rpx, rpx), V_MUL(rpy, rpy));
		float share[AL_W];
		bool store_all = uniform; /* no share is 0: every lane's line is written */
		al_v sh = half;
		if (!uniform && w->uniform_share) {
			/* quality mode, equal weights: the right of way, then between
			 * equals the follow rules, quality_follow's operations lane by lane */
			al_v equal = all, by_rank = half;
			if (w->q_any_rank) {
				float equal_l[AL_W];
				for (uint32_t l = 0; l < AL_W; ++l) {
					const uint8_t rank_other = w->q_rank[e[l].index];
					equal_l[l] = rank_self == rank_other ? 1.0f : 0.0f;
					share[l] = rank_self == rank_other  ? 0.5f
					           : rank_self < rank_other ? ORCA_Q_YIELD_SHARE
					                                    : 1.0f - ORCA_Q_YIELD_SHARE;
				}
				equal = V_GT(V_LOADU(equal_l), zero);
				by_rank = V_LOADU(share);
			}
			sh = follow ? AL_FN(follow_shares)(q_follow, e, &fs, px, py, rpx, rpy, dist_sq, equal, by_rank) : by_rank;
			V_STOREU(share, sh);
			store_all = ((unsigned)V_MOVEMASK(V_EQ(sh, zero)) & ((1u << lanes) - 1u)) == 0;
		} else if (!uniform) {
			for (uint32_t l = 0; l < AL_W; ++l) {
				const tree_agent *other = &ta[e[l].index];
				share[l] = avoidance_share(p->weight, other->weight, (other->mask & p->layer) != 0);
				if (quality)
					share[l] = quality_share(w, self, e[l].index, share[l]);
			}
			sh = V_LOADU(share);
		}
		const al_v cr = V_ADD(radius, orad);
		const al_v cr_sq = V_MUL(cr, cr);
		const al_v apart = V_GT(dist_sq, cr_sq);
		const al_v inv = AL_FN(blend)(apart, inv_th, inv_dt);

		/* w: from the cut-off centre to the relative velocity */
		const al_v wx = V_SUB(rvx, V_MUL(rpx, inv)), wy = V_SUB(rvy, V_MUL(rpy, inv));
		const al_v wl_sq = V_ADD(V_MUL(wx, wx), V_MUL(wy, wy));
		const al_v dot1 = V_ADD(V_MUL(wx, rpx), V_MUL(wy, rpy));
		const al_v on_circle = V_AND(apart, V_AND(V_LT(dot1, zero), V_GT(V_MUL(dot1, dot1), V_MUL(cr_sq, wl_sq))));
		const al_v circle = V_OR(on_circle, V_ANDNOT(apart, all));

		/* cut-off circle (or collision) */
		const al_v wl = V_SQRT(wl_sq);
		const al_v inv_wl = V_DIV(one, wl);
		al_v ux = V_MUL(wx, inv_wl), uy = V_MUL(wy, inv_wl);
		const unsigned stuck = (unsigned)V_MOVEMASK(V_EQ(wl, zero)) & ~(unsigned)V_MOVEMASK(apart);
		if (stuck)
			AL_FN(separate_lanes)(self, e, stuck, &ux, &uy);
		const al_v cs = V_SUB(V_MUL(cr, inv), wl);
		const al_v c_dx = uy, c_dy = V_XOR(ux, sign);
		const al_v c_ux = V_MUL(ux, cs), c_uy = V_MUL(uy, cs);

		/* legs */
		const al_v leg = V_SQRT(V_SUB(dist_sq, cr_sq));
		const al_v left = V_GT(V_SUB(V_MUL(rpx, wy), V_MUL(rpy, wx)), zero);
		const al_v inv_d = V_DIV(one, dist_sq);
		/* Both legs in one formula: the right leg is the left one with -cr,
		 * negated. x*(-cr) is -(x*cr) and a - (-b) is a + b exactly, so
		 * each lane computes RVO2's expressions for its leg. */
		const al_v flip = V_ANDNOT(left, sign);
		const al_v s_cr = V_XOR(cr, flip);
		const al_v lx = V_SUB(V_MUL(rpx, leg), V_MUL(rpy, s_cr));
		const al_v ly = V_ADD(V_MUL(rpx, s_cr), V_MUL(rpy, leg));
		const al_v l_dx = V_MUL(V_XOR(lx, flip), inv_d);
		const al_v l_dy = V_MUL(V_XOR(ly, flip), inv_d);
		const al_v dot2 = V_ADD(V_MUL(rvx, l_dx), V_MUL(rvy, l_dy));
		const al_v l_ux = V_SUB(V_MUL(l_dx, dot2), rvx);
		const al_v l_uy = V_SUB(V_MUL(l_dy, dot2), rvy);

		const al_v opx = V_ADD(vx, V_MUL(AL_FN(blend)(circle, c_ux, l_ux), sh));
		const al_v opy = V_ADD(vy, V_MUL(AL_FN(blend)(circle, c_uy, l_uy), sh));
		const al_v odx = AL_FN(blend)(circle, c_dx, l_dx), ody = AL_FN(blend)(circle, c_dy, l_dy);
		if (store_all) {
			/* no share is 0: write the lines straight out (the buffer
			 * has room for AL_W past the last) */
			V_STOREU(lines->px + n, opx);
			V_STOREU(lines->py + n, opy);
			V_STOREU(lines->dx + n, odx);
			V_STOREU(lines->dy + n, ody);
			n += lanes;
			continue;
		}
		float dx[AL_W], dy[AL_W], ox[AL_W], oy[AL_W];
		V_STOREU(dx, odx);
		V_STOREU(dy, ody);
		V_STOREU(ox, opx);
		V_STOREU(oy, opy);
		for (uint32_t l = 0; l < lanes; ++l) {
			if (share[l] == 0.0f)
				continue; /* this agent never yields to that one */
			lines->px[n] = ox[l];
			lines->py[n] = oy[l];
			lines->dx[n] = dx[l];
			lines->dy[n] = dy[l];
			++n;
		}
	}
	return n;
}

#undef al_v
#undef AL_W
#undef AL_FN
#undef V_SET1
#undef V_ZERO
#undef V_ALL
#undef V_ADD
#undef V_SUB
#undef V_MUL
#undef V_DIV
#undef V_SQRT
#undef V_AND
#undef V_OR
#undef V_ANDNOT
#undef V_XOR
#undef V_GT
#undef V_LT
#undef V_EQ
#undef V_LOADU
#undef V_STOREU
#undef V_MOVEMASK
