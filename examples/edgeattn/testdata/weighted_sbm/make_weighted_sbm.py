"""Writes weighted_sbm.npz: a 240-node, 3-class stochastic block model whose edges carry weights.

Rows are destinations (bench write-inputs' layout, which `edgeattn train --dataset FILE` reads):
adj_indptr int64 [N+1], adj_indices int32 [E], adj_data float32 [E] (the edge weights, in [0, 2),
some exactly 0), adj_shape int64 (N, N), adj_rows_are_destinations True, attr_matrix float32
[N, 8] (the class's one-hot plus noise), labels int64 [N], idx_train / idx_val / idx_test.
Read by the tools_train_mini_batch_samples_by_edge_weight test in examples/CMakeLists.txt.

    python3 make_weighted_sbm.py   # numpy; deterministic (seeded)
"""
import numpy as np

rng = np.random.default_rng(7)
n, classes, features = 240, 3, 8
labels = np.arange(n) % classes
x = rng.normal(0.0, 0.6, size=(n, features)).astype(np.float32)
x[np.arange(n), labels] += 1.0
rows = []
for i in range(n):
    same = np.flatnonzero((labels == labels[i]) & (np.arange(n) != i))
    other = np.flatnonzero(labels != labels[i])
    src = np.concatenate([rng.choice(same, 6, replace=False), rng.choice(other, 2, replace=False)])
    rows.append(np.sort(src))
indptr = np.zeros(n + 1, dtype=np.int64)
indptr[1:] = np.cumsum([len(r) for r in rows])
indices = np.concatenate(rows).astype(np.int32)
weights = rng.uniform(0.0, 2.0, size=len(indices)).astype(np.float32)
weights[rng.random(len(indices)) < 0.1] = 0.0
perm = rng.permutation(n)
np.savez("weighted_sbm.npz", adj_indptr=indptr, adj_indices=indices, adj_data=weights,
         adj_shape=np.array([n, n], dtype=np.int64), adj_rows_are_destinations=np.array(True),
         attr_matrix=x, labels=labels.astype(np.int64), idx_train=np.sort(perm[:120]).astype(np.int64),
         idx_val=np.sort(perm[120:160]).astype(np.int64), idx_test=np.sort(perm[160:]).astype(np.int64))
