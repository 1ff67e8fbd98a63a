/*-------------------------------------------------------------------------
 * assign_test.c
 *		Standalone property tests of src/partitions_assign.c: for 1-50
 *		members with random weights (fixed seeds), every segment has one
 *		owner, shares follow the weights, a join moves only what the
 *		newcomer takes, a leave only the leaver's segments, range slices
 *		are contiguous and proportional; bad input is refused.
 *
 * Run it through test/parts/run.sh.  The last line is the summary.
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partitions_assign.h"

#define MAXM	64

#ifndef GOLDEN_HASH_A0
#define GOLDEN_HASH_A0	UINT64_C(7483122976069423010)
#define GOLDEN_STICKY	"abaaabcb"
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
	/* 0.25 .. 10, spread over a factor of 40 */
	return 0.25 + (double) (rng() % 9751) / 1000.0;
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
owners_ok(const int32_t * own, int segments, int n, int *cnt)
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
				wrong = 0,
				newcnt;
	int			leaver;
	PartMember	fewer[MAXM];
	int			nfewer = 0;

	rng_state = UINT64_C(0x2545f4914f6cdd1d) + (uint64_t) seed * 7919 + (uint64_t) n * 104729;
	make_group(&g, n);
	tw = total_weight(g.m, n);
	check(part_assign(g.m, n, segments, PART_STICKY, own_a), "sticky accepts valid input", seed, n);
	check(owners_ok(own_a, segments, n, cnt), "sticky: every segment exactly one owner", seed, n);
	for (int i = 0; i < n; i++)
	{
		double		share = (double) cnt[i] / segments;
		double		target = g.m[i].weight / tw;

		/* absolute: within 5 points of the weight share */
		check(fabs(share - target) <= 0.05, "sticky: share within 5 points of the weight share", seed, n);
		/* relative 5% where the binomial spread allows it (>= 4 sigma) */
		if (target * segments >= 6000)
			check(fabs(share - target) <= 0.05 * target, "sticky: share within 5% of a large weight share", seed, n);
	}

	/* deterministic: the same input, the same answer */
	check(part_assign(g.m, n, segments, PART_STICKY, own_b) &&
		  memcmp(own_a, own_b, sizeof(int32_t) * segments) == 0, "sticky is deterministic", seed, n);

	/* a join: only segments the newcomer takes move */
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
	newcnt = 0;
	for (int s = 0; s < segments; s++)
	{
		const char *before = g.m[own_a[s]].name;
		const char *after = more[own_b[s]].name;

		if (strcmp(before, after) != 0)
		{
			moved++;
			if (strcmp(after, newname) != 0)
				wrong++;
		}
		if (strcmp(after, newname) == 0)
			newcnt++;
	}
	check(wrong == 0, "sticky join: every moved segment went to the newcomer", seed, n);
	check(moved == newcnt, "sticky join: moved exactly the newcomer's segments", seed, n);
	{
		double		fair = segments * newweight / (tw + newweight);

		check(moved <= fair + 0.05 * segments, "sticky join: moved within 5 points of the fair share", seed, n);
		if (fair >= 6000)
			check(moved <= 1.1 * fair, "sticky join: moved at most 1.1x a large fair share", seed, n);
	}

	/* a leave: only the leaver's segments move */
	if (n >= 2)
	{
		leaver = (int) (rng() % (uint64_t) n);
		for (int i = 0; i < n; i++)
			if (i != leaver)
				fewer[nfewer++] = g.m[i];
		check(part_assign(fewer, nfewer, segments, PART_STICKY, own_b), "sticky leave accepted", seed, n);
		wrong = 0;
		for (int s = 0; s < segments; s++)
		{
			bool		was_leavers = own_a[s] == leaver;
			bool		same = strcmp(g.m[own_a[s]].name, fewer[own_b[s]].name) == 0;

			if (!was_leavers && !same)
				wrong++;
		}
		check(wrong == 0, "sticky leave: only the leaver's segments moved", seed, n);
	}
}

static void
range_properties(int seed, int n, int segments)
{
	TestGroup	g;
	int			cnt[MAXM];
	double		tw;
	bool		contiguous = true,
				proportional = true;

	rng_state = UINT64_C(0x9e3779b97f4a7c15) + (uint64_t) seed * 31337 + (uint64_t) n * 65537;
	make_group(&g, n);
	tw = total_weight(g.m, n);
	check(part_assign(g.m, n, segments, PART_RANGE, own_a), "range accepts valid input", seed, n);
	check(owners_ok(own_a, segments, n, cnt), "range: every segment exactly one owner", seed, n);
	for (int s = 1; s < segments; s++)
		if (own_a[s] < own_a[s - 1])
			contiguous = false;
	check(contiguous,
		  "range: contiguous slices in member-name order", seed, n);
	for (int i = 0; i < n; i++)
	{
		double		exact = segments * g.m[i].weight / tw;

		if (cnt[i] < floor(exact) - 1e-9 || cnt[i] > ceil(exact) + 1e-9)
			proportional = false;
	}
	check(proportional, "range: each slice the floor or ceiling of its weight share", seed, n);
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

/* the hash must never change: a group's assignment would move */
static void
golden(void)
{
	PartMember	m[3] = {{"a", 1, 3.0}, {"b", 1, 2.0}, {"c", 1, 1.0}};
	int32_t		own[8];
	char		got[9];

	check(part_hash("a", 1, 0) == GOLDEN_HASH_A0, "part_hash(\"a\", 0) is the golden value", 0, 0);
	part_assign(m, 3, 8, PART_STICKY, own);
	for (int s = 0; s < 8; s++)
		got[s] = 'a' + own[s];
	got[8] = 0;
	check(strcmp(got, GOLDEN_STICKY) == 0, "sticky 3:2:1 over 8 segments is the golden assignment", 0, 3);
	part_assign(m, 3, 8, PART_RANGE, own);
	for (int s = 0; s < 8; s++)
		got[s] = 'a' + own[s];
	check(strcmp(got, "aaaabbcc") == 0 || strcmp(got, "aaaabbbc") == 0, "range 3:2:1 over 8 segments", 0, 3);
	if (getenv("PARTS_PRINT_GOLDEN"))
	{
		part_assign(m, 3, 8, PART_STICKY, own);
		for (int s = 0; s < 8; s++)
			got[s] = 'a' + own[s];
		printf("golden: hash %llu sticky %s\n", (unsigned long long) part_hash("a", 1, 0), got);
	}
}

int
main(void)
{
	golden();
	refusals();
	for (int n = 1; n <= 50; n++)
		for (int seed = 1; seed <= 4; seed++)
		{
			sticky_properties(seed, n, 1024);
			range_properties(seed, n, 1024);
			range_properties(seed, n, 7);
		}
	for (int n = 1; n <= 50; n += 7)
		sticky_properties(99, n, 65536);
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
