/*-------------------------------------------------------------------------
 * assign_test.c
 *		Standalone property tests of partitions_assign.c: for 1-50
 *		members with random weights 0.1 .. 10 (fixed seeds, thousands of
 *		member sets), every segment has one owner; every member's count is
 *		within max(5% of its fair share, 1 segment) of the fair share
 *		segments * weight / total weight (in fact within 1: largest
 *		remainder); a join gives the newcomer its quota and a leave moves
 *		all the leaver's segments, and either moves at most 2 sqrt(segments)
 *		segments beyond those (the chains of the quotas: no pure function of
 *		the membership can have none, see partitions_assign.c), and in all
 *		at most 30% beyond the minimum at 1024 segments; range slices are
 *		contiguous, in name order, and floor or ceiling of the fair share;
 *		bad input is refused; golden values pin the hash and the result.
 *
 * Run it through test/parts/run.sh.  The lines before the last report the
 * measured worst cases; the last line is the summary.
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partitions/partitions_assign.h"

#define MAXM	64

#ifndef GOLDEN_HASH_A0
#define GOLDEN_HASH_A0	UINT64_C(7483122976069423010)
#define GOLDEN_STICKY	"abaaabcb"
#define GOLDEN_DIGEST	UINT64_C(5656203490097816587)
#endif

static int	checks = 0;
static int	failures = 0;

static void
check(bool ok, const char *what, int seed, int n)
{
	checks++;
	if (!ok)
	{
		failures++;
		if (failures <= 30)
			printf("FAIL: %s (seed %d, %d members)\n", what, seed, n);
	}
}

static uint64_t rng_state;

static uint64_t
rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double
rnd_weight(void)
{
	/* 0.1 .. 10, spread over a factor of 100, as a real (float4) is */
	return (double) (float) (0.1 + (double) (rng() % 9901) / 1000.0);
}

typedef struct TestGroup
{
	char		names[MAXM][16];
	PartMember	m[MAXM];
	int			n;
} TestGroup;

static int
cmp_member(const void *a, const void *b)
{
	return strcmp(((const PartMember *) a)->name, ((const PartMember *) b)->name);
}

/* n members, random distinct names and weights, sorted by name */
static void
make_group(TestGroup *g, int n)
{
	g->n = 0;
	while (g->n < n)
	{
		char	   *nm = g->names[g->n];
		bool		dup = false;

		snprintf(nm, 16, "r%llx", (unsigned long long) (rng() % 100000));
		for (int i = 0; i < g->n; i++)
			dup |= strcmp(g->m[i].name, nm) == 0;
		if (dup)
			continue;
		g->m[g->n].name = nm;
		g->m[g->n].len = strlen(nm);
		g->m[g->n].weight = rnd_weight();
		g->n++;
	}
	qsort(g->m, g->n, sizeof(PartMember), cmp_member);
}

static double
total_weight(const PartMember *m, int n)
{
	double		t = 0;

	for (int i = 0; i < n; i++)
		t += m[i].weight;
	return t;
}

static int32_t own_a[PART_MAX_SEGMENTS];
static int32_t own_b[PART_MAX_SEGMENTS];

/* every segment one owner in range; counts per member into cnt */
static bool
owners_ok(const int32_t *own, int segments, int n, int *cnt)
{
	memset(cnt, 0, sizeof(int) * MAXM);
	for (int s = 0; s < segments; s++)
	{
		if (own[s] < 0 || own[s] >= n)
			return false;
		cnt[own[s]]++;
	}
	return true;
}

/* the newcomer's (or leaver's) counterpart: index by name in another set */
static int
find(const PartMember *m, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(m[i].name, name) == 0)
			return i;
	return -1;
}

/* the measured worst cases, printed before the summary */
static double worst_share = 0;	/* max |count - fair| / max(0.05 fair, 1) */
static double worst_abs = 0;	/* max |count - fair| */
static double worst_join_ratio = 0; /* max moved / fair share of the newcomer */
static int	worst_join_extra = 0;	/* max moved beyond the newcomer's */
static int	worst_leave_extra = 0;	/* max moved beyond the leaver's */
static long join_moved = 0,
			join_min = 0,
			leave_moved = 0,
			leave_min = 0;
static int	joins = 0,
			joins_within_11 = 0;

/* counts within max(5% of fair, 1) of the fair share, and the quota */
static void
check_shares(const PartMember *m, int n, int segments, const int *cnt,
			 const char *what, int seed, int group)
{
	double		tw = total_weight(m, n);
	int			quota[MAXM];
	bool		within = true,
				exact = true,
				quotas = true;

	part_quotas(m, n, segments, quota);
	for (int i = 0; i < n; i++)
	{
		double		fair = segments * m[i].weight / tw;
		double		err = fabs(cnt[i] - fair);
		double		tol = fmax(0.05 * fair, 1.0);

		if (err / tol > worst_share)
			worst_share = err / tol;
		if (err > worst_abs)
			worst_abs = err;
		within &= err <= tol;
		exact &= err < 1.0 + 1e-6;
		quotas &= cnt[i] == quota[i];
	}
	check(within, what, seed, group);
	check(exact, "count within 1 segment of the fair share", seed, group);
	check(quotas, "count is part_quotas' quota", seed, group);
}

static void
sticky_properties(int seed, int n, int segments)
{
	TestGroup	g;
	int			cnt[MAXM];
	double		tw;
	PartMember	more[MAXM];
	int			nmore;
	char		newname[16];
	double		newweight;
	int			moved = 0,
				newcnt = 0;
	int			leaver;
	PartMember	fewer[MAXM];
	int			nfewer = 0;
	double		sq = 2 * sqrt((double) segments);

	rng_state = UINT64_C(0x2545f4914f6cdd1d) + (uint64_t) seed * 7919 + (uint64_t) n * 104729;
	make_group(&g, n);
	tw = total_weight(g.m, n);
	check(part_assign(g.m, n, segments, PART_STICKY, own_a), "sticky accepts valid input", seed, n);
	check(owners_ok(own_a, segments, n, cnt), "sticky: every segment exactly one owner", seed, n);
	check_shares(g.m, n, segments, cnt, "sticky: share within max(5% of fair, 1)", seed, n);

	/* deterministic: the same input, the same answer */
	check(part_assign(g.m, n, segments, PART_STICKY, own_b) &&
		  memcmp(own_a, own_b, sizeof(int32_t) * segments) == 0, "sticky is deterministic", seed, n);

	/* a join: the newcomer gets its quota; little else moves */
	memcpy(more, g.m, sizeof(PartMember) * n);
	do
		snprintf(newname, sizeof(newname), "n%llx", (unsigned long long) (rng() % 100000));
	while (find(g.m, n, newname) >= 0);
	newweight = rnd_weight();
	more[n].name = newname;
	more[n].len = strlen(newname);
	more[n].weight = newweight;
	nmore = n + 1;
	qsort(more, nmore, sizeof(PartMember), cmp_member);
	check(part_assign(more, nmore, segments, PART_STICKY, own_b), "sticky join accepted", seed, n);
	check(owners_ok(own_b, segments, nmore, cnt), "sticky join: every segment exactly one owner", seed, n);
	check_shares(more, nmore, segments, cnt, "sticky join: share within max(5% of fair, 1)", seed, n);
	for (int s = 0; s < segments; s++)
	{
		bool		to_new = strcmp(more[own_b[s]].name, newname) == 0;

		if (strcmp(g.m[own_a[s]].name, more[own_b[s]].name) != 0)
			moved++;
		if (to_new)
			newcnt++;
	}
	{
		double		fair = segments * newweight / (tw + newweight);

		check(moved >= newcnt, "sticky join: the newcomer's segments moved", seed, n);
		check(moved - newcnt <= sq, "sticky join: at most 2 sqrt(segments) beyond the newcomer's", seed, n);
		if (moved - newcnt > worst_join_extra)
			worst_join_extra = moved - newcnt;
		if (fair >= 1 && moved / fair > worst_join_ratio)
			worst_join_ratio = moved / fair;
		if (segments == 1024)
		{
			join_moved += moved;
			join_min += newcnt;
			joins++;
			joins_within_11 += moved <= 1.1 * fair + 1;
		}
	}

	/* a leave: every segment of the leaver moves; little else */
	if (n >= 2)
	{
		int			extra = 0,
					mine = 0;

		leaver = (int) (rng() % (uint64_t) n);
		for (int i = 0; i < n; i++)
			if (i != leaver)
				fewer[nfewer++] = g.m[i];
		check(part_assign(fewer, nfewer, segments, PART_STICKY, own_b), "sticky leave accepted", seed, n);
		check(owners_ok(own_b, segments, nfewer, cnt), "sticky leave: every segment exactly one owner", seed, n);
		check_shares(fewer, nfewer, segments, cnt, "sticky leave: share within max(5% of fair, 1)", seed, n);
		for (int s = 0; s < segments; s++)
		{
			if (own_a[s] == leaver)
				mine++;
			else if (strcmp(g.m[own_a[s]].name, fewer[own_b[s]].name) != 0)
				extra++;
		}
		check(extra <= sq, "sticky leave: at most 2 sqrt(segments) beyond the leaver's", seed, n);
		if (extra > worst_leave_extra)
			worst_leave_extra = extra;
		if (segments == 1024)
		{
			leave_moved += mine + extra;
			leave_min += mine;
		}
	}
}

/* plain rendezvous: exact movement, shares only measured */
static double rv_worst_share = 0;
static int	rv_joins = 0,
			rv_joins_within_11 = 0,
			rv_sets = 0,
			rv_sets_within = 0;

static void
rendezvous_properties(int seed, int n, int segments)
{
	TestGroup	g;
	int			cnt[MAXM];
	double		tw;
	PartMember	more[MAXM];
	PartMember	fewer[MAXM];
	int			nfewer = 0;
	char		newname[16];
	double		newweight;
	int			moved = 0,
				newcnt = 0,
				wrong = 0;
	bool		within = true;

	rng_state = UINT64_C(0x5851f42d4c957f2d) + (uint64_t) seed * 7919 + (uint64_t) n * 104729;
	make_group(&g, n);
	tw = total_weight(g.m, n);
	check(part_assign(g.m, n, segments, PART_RENDEZVOUS, own_a), "rendezvous accepts valid input", seed, n);
	check(owners_ok(own_a, segments, n, cnt), "rendezvous: every segment exactly one owner", seed, n);
	for (int i = 0; i < n; i++)
	{
		double		fair = segments * g.m[i].weight / tw;
		double		r = fabs(cnt[i] - fair) / fmax(0.05 * fair, 1.0);

		if (r > rv_worst_share)
			rv_worst_share = r;
		within &= r <= 1;
	}
	rv_sets++;
	rv_sets_within += within;

	memcpy(more, g.m, sizeof(PartMember) * n);
	do
		snprintf(newname, sizeof(newname), "n%llx", (unsigned long long) (rng() % 100000));
	while (find(g.m, n, newname) >= 0);
	newweight = rnd_weight();
	more[n].name = newname;
	more[n].len = strlen(newname);
	more[n].weight = newweight;
	qsort(more, n + 1, sizeof(PartMember), cmp_member);
	check(part_assign(more, n + 1, segments, PART_RENDEZVOUS, own_b), "rendezvous join accepted", seed, n);
	for (int s = 0; s < segments; s++)
	{
		bool		to_new = strcmp(more[own_b[s]].name, newname) == 0;

		if (strcmp(g.m[own_a[s]].name, more[own_b[s]].name) != 0)
		{
			moved++;
			wrong += !to_new;
		}
		newcnt += to_new;
	}
	check(wrong == 0 && moved == newcnt, "rendezvous join: only the newcomer's segments moved", seed, n);
	rv_joins++;
	rv_joins_within_11 += moved <= 1.1 * (segments * newweight / (tw + newweight)) + 1;

	if (n >= 2)
	{
		int			leaver = (int) (rng() % (uint64_t) n);

		for (int i = 0; i < n; i++)
			if (i != leaver)
				fewer[nfewer++] = g.m[i];
		check(part_assign(fewer, nfewer, segments, PART_RENDEZVOUS, own_b), "rendezvous leave accepted", seed, n);
		wrong = 0;
		for (int s = 0; s < segments; s++)
			if (own_a[s] != leaver && strcmp(g.m[own_a[s]].name, fewer[own_b[s]].name) != 0)
				wrong++;
		check(wrong == 0, "rendezvous leave: only the leaver's segments moved", seed, n);
	}
}


static void
range_properties(int seed, int n, int segments)
{
	TestGroup	g;
	int			cnt[MAXM];
	int			quota[MAXM];
	bool		contiguous = true,
				proportional = true;
	double		tw;

	rng_state = UINT64_C(0x9e3779b97f4a7c15) + (uint64_t) seed * 31337 + (uint64_t) n * 65537;
	make_group(&g, n);
	tw = total_weight(g.m, n);
	check(part_assign(g.m, n, segments, PART_RANGE, own_a), "range accepts valid input", seed, n);
	check(owners_ok(own_a, segments, n, cnt), "range: every segment exactly one owner", seed, n);
	for (int s = 1; s < segments; s++)
		if (own_a[s] < own_a[s - 1])
			contiguous = false;
	check(contiguous, "range: contiguous slices in member-name order", seed, n);
	part_quotas(g.m, n, segments, quota);
	for (int i = 0; i < n; i++)
	{
		double		exact = segments * g.m[i].weight / tw;

		if (cnt[i] < floor(exact) - 1e-6 || cnt[i] > ceil(exact) + 1e-6 || cnt[i] != quota[i])
			proportional = false;
	}
	check(proportional, "range: each slice the floor or ceiling of its fair share", seed, n);
	if (segments >= 20 * n)
		check_shares(g.m, n, segments, cnt, "range: share within max(5% of fair, 1)", seed, n);
}

static void
refusals(void)
{
	PartMember	m[2] = {{"a", 1, 1.0}, {"b", 1, 1.0}};
	PartMember	bad[2];
	static PartMember many[PART_MAX_MEMBERS + 1];
	static char manynames[PART_MAX_MEMBERS + 1][16];

	check(!part_assign(m, 0, 16, PART_STICKY, own_a), "no members refused", 0, 0);
	check(!part_assign(m, 2, 0, PART_STICKY, own_a), "0 segments refused", 0, 2);
	check(!part_assign(m, 2, PART_MAX_SEGMENTS + 1, PART_RANGE, own_a), "65537 segments refused", 0, 2);
	check(part_assign(m, 2, PART_MAX_SEGMENTS, PART_RANGE, own_a), "65536 segments accepted", 0, 2);
	bad[0] = m[1];
	bad[1] = m[0];
	check(!part_assign(bad, 2, 16, PART_STICKY, own_a), "unsorted members refused", 0, 2);
	bad[0] = m[0];
	bad[1] = m[0];
	check(!part_assign(bad, 2, 16, PART_STICKY, own_a), "duplicate members refused", 0, 2);
	bad[1] = m[1];
	bad[1].weight = 0;
	check(!part_assign(bad, 2, 16, PART_STICKY, own_a), "weight 0 refused", 0, 2);
	bad[1].weight = -1;
	check(!part_assign(bad, 2, 16, PART_RANGE, own_a), "negative weight refused", 0, 2);
	bad[1].weight = NAN;
	check(!part_assign(bad, 2, 16, PART_STICKY, own_a), "NaN weight refused", 0, 2);
	bad[1].weight = INFINITY;
	check(!part_assign(bad, 2, 16, PART_STICKY, own_a), "infinite weight refused", 0, 2);
	for (int i = 0; i <= PART_MAX_MEMBERS; i++)
	{
		snprintf(manynames[i], sizeof(manynames[i]), "m%04d", i);
		many[i].name = manynames[i];
		many[i].len = strlen(manynames[i]);
		many[i].weight = 1;
	}
	check(!part_assign(many, PART_MAX_MEMBERS + 1, 16, PART_STICKY, own_a), "1001 members refused", 0, 1001);
	check(part_assign(many, PART_MAX_MEMBERS, 1024, PART_STICKY, own_a), "1000 members accepted", 0, 1000);
	/* more members than segments: range gives some none, still one owner each */
	check(part_assign(many, 10, 3, PART_RANGE, own_a) && own_a[0] <= own_a[1] && own_a[1] <= own_a[2],
		  "range with more members than segments", 0, 10);
}

/* FNV-1a of the owners: pins a whole assignment */
static uint64_t
digest(const int32_t *own, int segments)
{
	uint64_t	h = UINT64_C(0xcbf29ce484222325);

	for (int s = 0; s < segments; s++)
	{
		h ^= (uint64_t) (uint32_t) own[s];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

/*
 * The hash and the assignment must never change (a group's segments would
 * move on an upgrade, or differ between platforms): golden values.
 */
static void
golden(void)
{
	PartMember	m[3] = {{"a", 1, 3.0}, {"b", 1, 2.0}, {"c", 1, 1.0}};
	static PartMember m20[20];
	static char n20[20][16];
	int32_t		own[8];
	char		got[9];
	uint64_t	d;

	check(part_hash("a", 1, 0) == GOLDEN_HASH_A0, "part_hash(\"a\", 0) is the golden value", 0, 0);
	part_assign(m, 3, 8, PART_STICKY, own);
	for (int s = 0; s < 8; s++)
		got[s] = 'a' + own[s];
	got[8] = 0;
	check(strcmp(got, GOLDEN_STICKY) == 0, "sticky 3:2:1 over 8 segments is the golden assignment", 0, 3);
	for (int i = 0; i < 20; i++)
	{
		snprintf(n20[i], sizeof(n20[i]), "w%02d", i);
		m20[i].name = n20[i];
		m20[i].len = strlen(n20[i]);
		m20[i].weight = (double) (float) (0.1 + 0.5 * i);
	}
	part_assign(m20, 20, 1024, PART_STICKY, own_a);
	d = digest(own_a, 1024);
	check(d == GOLDEN_DIGEST, "sticky over 20 members and 1024 segments is the golden assignment", 0, 20);
	part_assign(m, 3, 8, PART_RANGE, own);
	for (int s = 0; s < 8; s++)
		got[s] = 'a' + own[s];
	check(strcmp(got, "aaaabbbc") == 0, "range 3:2:1 over 8 segments: 4, 3, 1", 0, 3);
	if (getenv("PARTS_PRINT_GOLDEN"))
	{
		part_assign(m, 3, 8, PART_STICKY, own);
		for (int s = 0; s < 8; s++)
			got[s] = 'a' + own[s];
		printf("golden: hash %llu sticky %s digest %llu\n", (unsigned long long) part_hash("a", 1, 0), got,
			   (unsigned long long) d);
	}
}

/* the largest group, and weights far apart */
static void
large(void)
{
	static PartMember big[PART_MAX_MEMBERS];
	static char names[PART_MAX_MEMBERS][16];
	static int	cnt[PART_MAX_MEMBERS];
	static int	quota[PART_MAX_MEMBERS];
	bool		ok = true;
	PartMember	far[3] = {{"a", 1, 1e-30}, {"b", 1, 1.0}, {"c", 1, 3e38}};
	PartMember	tiny[2] = {{"a", 1, 1e-38}, {"b", 1, 2e-38}};

	rng_state = UINT64_C(0x1234567);
	for (int i = 0; i < PART_MAX_MEMBERS; i++)
	{
		snprintf(names[i], sizeof(names[i]), "m%04d", i);
		big[i].name = names[i];
		big[i].len = strlen(names[i]);
		big[i].weight = rnd_weight();
	}
	check(part_assign(big, PART_MAX_MEMBERS, PART_MAX_SEGMENTS, PART_STICKY, own_a),
		  "1000 members x 65536 segments accepted", 0, PART_MAX_MEMBERS);
	part_quotas(big, PART_MAX_MEMBERS, PART_MAX_SEGMENTS, quota);
	memset(cnt, 0, sizeof(cnt));
	for (int s = 0; s < PART_MAX_SEGMENTS; s++)
		if (own_a[s] < 0 || own_a[s] >= PART_MAX_MEMBERS)
			ok = false;
		else
			cnt[own_a[s]]++;
	for (int i = 0; i < PART_MAX_MEMBERS; i++)
		ok &= cnt[i] == quota[i];
	check(ok, "1000 x 65536: one owner each, counts are the quotas", 0, PART_MAX_MEMBERS);

	check(part_assign(far, 3, 1024, PART_STICKY, own_a), "weights 1e-30, 1, 3e38 accepted", 0, 3);
	ok = true;
	for (int s = 0; s < 1024; s++)
		ok &= own_a[s] == 2;
	check(ok, "weights 1e-30, 1, 3e38: the heaviest owns all", 0, 3);
	check(part_assign(tiny, 2, 1024, PART_STICKY, own_a), "weights 1e-38, 2e-38 accepted", 0, 2);
	owners_ok(own_a, 1024, 2, cnt);
	check(cnt[0] == 341 && cnt[1] == 683, "weights 1e-38, 2e-38: 341 and 683", 0, 2);
}

int
main(void)
{
	golden();
	refusals();
	/* 1-50 members, 40 member sets each: 2000 sets, each joined and left */
	for (int n = 1; n <= 50; n++)
		for (int seed = 1; seed <= 40; seed++)
		{
			sticky_properties(seed, n, 1024);
			range_properties(seed, n, 1024);
			if (seed <= 4)
				range_properties(seed, n, 7);
			if (seed <= 10)
				rendezvous_properties(seed, n, 1024);
		}
	for (int n = 1; n <= 50; n += 7)
	{
		sticky_properties(99, n, 65536);
		sticky_properties(98, n, 256);
		range_properties(99, n, 65536);
	}
	large();
	printf("sticky, 1024 segments: worst share error %.3f of max(5%% of fair, 1) (%.3f segments)\n",
		   worst_share, worst_abs);
	printf("sticky, 1024 segments: a join moved %.3f of the minimum, a leave %.3f; "
		   "%d of %d joins within 1.1x the newcomer's fair share + 1\n",
		   (double) join_moved / (double) join_min, (double) leave_moved / (double) leave_min,
		   joins_within_11, joins);
	printf("sticky, all sizes: worst join moved %.2fx the newcomer's fair share; "
		   "worst beyond the minimum: join %d, leave %d segments\n",
		   worst_join_ratio, worst_join_extra, worst_leave_extra);
	printf("rendezvous, 1024 segments: worst share error %.2f of max(5%% of fair, 1); "
		   "%d of %d member sets all within it; %d of %d joins within 1.1x the newcomer's fair share + 1\n",
		   rv_worst_share, rv_sets_within, rv_sets, rv_joins_within_11, rv_joins);
	check((double) join_moved <= 1.3 * (double) join_min, "joins at 1024 moved at most 1.3x the minimum in all", 0, 0);
	check((double) leave_moved <= 1.3 * (double) leave_min, "leaves at 1024 moved at most 1.3x the minimum in all", 0, 0);
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
