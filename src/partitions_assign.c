/*-------------------------------------------------------------------------
 * partitions_assign.c
 *		The target owner of every segment of a partition group.
 *
 * Every session computes the assignment alone, from the live members it
 * reads (no leader), so it must be a deterministic function of the
 * members' names and weights:
 *	- sticky: weighted rendezvous hashing.  Segment s goes to the member
 *	  with the smallest -ln(u(m, s)) / weight(m), u a uniform draw in (0, 1)
 *	  from a fixed 64-bit hash of (name, s).  That minimum is an exponential
 *	  race, so a member wins a segment with probability weight / total
 *	  weight; a member's score does not depend on the others, so a join
 *	  moves only the segments the newcomer wins and a leave only the
 *	  leaver's.  Shares are binomial around the weight share (at 1024
 *	  segments a share p deviates by about sqrt(p (1 - p) / 1024)).
 *	- range: the segments split into contiguous slices in member-name
 *	  order, each sized by weight (largest remainder, so they sum up).
 *
 * The hash is our own (FNV-1a over the name, a splitmix64 finaliser with
 * the segment), not the server's: a group's assignment must not change
 * with the platform's byte order or the PostgreSQL major.  The scores use
 * log(); every session of one server runs the same libm, which is all
 * "computes alike" needs.  Cost: segments x members hashes and logs, once
 * per membership change (the caller caches it); both are bounded
 * (PART_MAX_*).
 *
 * Pure: no catalog, no allocation, no error.
 *-------------------------------------------------------------------------
 */
#include "partitions_assign.h"

#include <math.h>
#include <string.h>

static uint64_t
mix64(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static uint64_t
name_hash(const char *name, size_t len)
{
	uint64_t	h = UINT64_C(0xcbf29ce484222325);

	for (size_t i = 0; i < len; i++)
	{
		h ^= (unsigned char) name[i];
		h *= UINT64_C(0x100000001b3);
	}
	return mix64(h);
}

static uint64_t
combine(uint64_t nh, uint64_t sh)
{
	return mix64(nh ^ sh);
}

uint64_t
part_hash(const char *name, size_t len, int segment)
{
	return combine(name_hash(name, len), mix64((uint64_t) (uint32_t) segment));
}

static bool
valid(const PartMember *members, int nmembers, int segments)
{
	if (nmembers < 1 || nmembers > PART_MAX_MEMBERS ||
		segments < 1 || segments > PART_MAX_SEGMENTS)
		return false;
	for (int i = 0; i < nmembers; i++)
	{
		if (!(members[i].weight > 0) || !isfinite(members[i].weight))
			return false;
		if (i > 0 && strcmp(members[i - 1].name, members[i].name) >= 0)
			return false;
	}
	return true;
}

static void
assign_sticky(const PartMember *members, int nmembers, int segments, int32_t * owner)
{
	uint64_t	nh[PART_MAX_MEMBERS];
	double		inv[PART_MAX_MEMBERS];

	for (int i = 0; i < nmembers; i++)
	{
		nh[i] = name_hash(members[i].name, members[i].len);
		inv[i] = 1.0 / members[i].weight;
	}
	for (int s = 0; s < segments; s++)
	{
		uint64_t	sh = mix64((uint64_t) (uint32_t) s);
		int32_t		best = 0;
		double		best_score = 0;

		for (int i = 0; i < nmembers; i++)
		{
			/* 53 bits, centred: u is never 0 nor 1 */
			double		u = ((double) (combine(nh[i], sh) >> 11) + 0.5) / 9007199254740992.0;
			double		score = -log(u) * inv[i];

			/* ties (never in practice) go to the first name */
			if (i == 0 || score < best_score)
			{
				best = i;
				best_score = score;
			}
		}
		owner[s] = best;
	}
}

static void
assign_range(const PartMember *members, int nmembers, int segments, int32_t * owner)
{
	int			count[PART_MAX_MEMBERS];
	double		frac[PART_MAX_MEMBERS];
	double		total = 0;
	int			given = 0;
	int			s = 0;

	for (int i = 0; i < nmembers; i++)
		total += members[i].weight;
	for (int i = 0; i < nmembers; i++)
	{
		double		exact = (double) segments * (members[i].weight / total);
		double		whole = floor(exact);

		if (whole > segments)
			whole = segments;
		count[i] = (int) whole;
		frac[i] = exact - whole;
		given += count[i];
	}
	if (given > segments)
	{
		/* rounding could only overshoot by a hair: take it back from the end */
		for (int i = nmembers - 1; i >= 0 && given > segments; i--)
			while (count[i] > 0 && given > segments)
			{
				count[i]--;
				given--;
			}
	}
	/* largest remainder; among equal remainders the first name */
	while (given < segments)
	{
		int			best = -1;

		for (int i = 0; i < nmembers; i++)
			if (frac[i] >= 0 && (best < 0 || frac[i] > frac[best]))
				best = i;
		if (best < 0)
			best = 0;			/* every remainder used: can't happen */
		count[best]++;
		frac[best] = -1;
		given++;
	}
	for (int i = 0; i < nmembers; i++)
		for (int k = 0; k < count[i]; k++)
			owner[s++] = i;
}

bool
part_assign(const PartMember *members, int nmembers, int segments,
			PartAssignor assignor, int32_t * owner)
{
	if (!valid(members, nmembers, segments))
		return false;
	if (assignor == PART_RANGE)
		assign_range(members, nmembers, segments, owner);
	else
		assign_sticky(members, nmembers, segments, owner);
	return true;
}
