import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assignClusters, ownedBy, type Assignable, type Assignment } from '../../../controller/hub/assign.ts';

function clusters(count: number, shard?: (index: number) => number | undefined): Assignable[] {
  return Array.from({ length: count }, (_, index) => ({ key: `https://spoke-${String(index).padStart(3, '0')}.example:6443`, shard: shard?.(index) }));
}

function replicas(count: number): string[] {
  return Array.from({ length: count }, (_, index) => `driftless-controller-${index}`);
}

function loads(assignment: Assignment, members: readonly string[]): number[] {
  return members.map((member) => ownedBy(assignment, member).length);
}

function moved(before: Assignment, after: Assignment): number {
  return [...after].filter(([key, owner]) => before.get(key) !== owner).length;
}

test('every cluster gets exactly one owner, and loads differ by at most one', () => {
  for (const count of [0, 1, 2, 5, 20, 40, 97]) {
    for (const replicaCount of [1, 2, 3, 4, 7]) {
      const members = replicas(replicaCount);
      const assignment = assignClusters(clusters(count), members);
      assert.equal(assignment.size, count);
      const perReplica = loads(assignment, members);
      assert.equal(perReplica.reduce((a, b) => a + b, 0), count);
      assert.ok(Math.max(...perReplica) - Math.min(...perReplica) <= 1, `${count} clusters over ${replicaCount} replicas: ${perReplica.join('/')}`);
    }
  }
});

test('every replica computes the same answer, whatever order it lists replicas and clusters in', () => {
  const all = clusters(40);
  const members = replicas(3);
  const one = assignClusters(all, members);
  const other = assignClusters([...all].reverse(), [...members].reverse());
  assert.deepEqual(other, one, 'a Map compares without order');
  assert.deepEqual(assignClusters(all, [...members, members[0] as string]), one, 'a replica listed twice counts once');
});

test('no replica: no owner', () => {
  assert.equal(assignClusters(clusters(4), []).size, 0);
});

test('a shard below the replica count pins the cluster to the replica of that rank; one above falls back, as in Argo CD', () => {
  const members = ['c', 'a', 'b'];
  const assignment = assignClusters([
    { key: 'https://pinned-0', shard: 0 },
    { key: 'https://pinned-2', shard: 2 },
    { key: 'https://too-high', shard: 3 },
    ...clusters(6),
  ], members);
  assert.equal(assignment.get('https://pinned-0'), 'a', 'rank 0 of the replicas sorted by identity');
  assert.equal(assignment.get('https://pinned-2'), 'c');
  assert.ok(members.includes(assignment.get('https://too-high') as string));
  assert.deepEqual(loads(assignment, ['a', 'b', 'c']), [3, 3, 3], 'pinned clusters count towards the bound');
});

test('pins win over balance: a replica pinned past the bound keeps its pins, the rest go to the others', () => {
  const assignment = assignClusters([...clusters(4, () => 0), ...clusters(8).slice(4)], ['r0', 'r1']);
  assert.deepEqual(ownedBy(assignment, 'r0').length, 4);
  assert.deepEqual(ownedBy(assignment, 'r1').length, 4);
});

test('a replica joining or leaving moves few clusters, not the fleet', () => {
  const all = clusters(40);
  const three = assignClusters(all, replicas(3));
  const four = assignClusters(all, replicas(4));
  // A quarter must move to the newcomer; a modulo assignment would move about three quarters.
  assert.ok(ownedBy(four, 'driftless-controller-3').length === 10);
  assert.ok(moved(three, four) <= 15, `joining moved ${moved(three, four)} of 40`);
  const two = assignClusters(all, replicas(2));
  const leaving = ownedBy(three, 'driftless-controller-2').length;
  assert.ok(moved(three, two) <= leaving + 2, `leaving moved ${moved(three, two)} of 40 (${leaving} were the leaver's)`);
});
