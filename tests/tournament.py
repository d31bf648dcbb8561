"""The round-robin tournament (circle method), written plainly: the reference the all-pairs
probe's rounds (native/allpairs.c) and the matrix writer's (``tournament_round``) are tested
against.

For N nodes (N even) there are N-1 rounds of N/2 disjoint pairs, and every pair of nodes
meets exactly once: N(N-1)/2 pairs in all. For N odd a "bye" is added, so there are N rounds
of (N-1)/2 pairs and each node rests once. Disjoint pairs can run at once without sharing a
node, so the all-pairs matrix costs (rounds x time of one pair), not (pairs x time of one pair).

Circle method: node 0 stays put, the others turn one place per round; in round r the node at
position i meets the node at position n-1-i.
"""

from __future__ import annotations


def rounds(n: int) -> list[list[tuple[int, int]]]:
    """The rounds for nodes 0..n-1; each pair is (lower, higher) index."""
    if n < 2:
        return []
    ring: list[int | None] = list(range(n))
    if n % 2:
        ring.append(None)  # the bye: whoever meets it rests this round
    m = len(ring)
    out: list[list[tuple[int, int]]] = []
    for _ in range(m - 1):
        pairs = []
        for i in range(m // 2):
            a, b = ring[i], ring[m - 1 - i]
            if a is not None and b is not None:
                pairs.append((min(a, b), max(a, b)))
        out.append(sorted(pairs))
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return out


def n_rounds(n: int) -> int:
    """N-1 for even N, N for odd N (one node rests each round)."""
    return 0 if n < 2 else (n - 1 if n % 2 == 0 else n)
