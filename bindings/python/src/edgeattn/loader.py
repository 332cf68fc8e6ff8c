"""Mini-batches of seed nodes with their sampled neighbourhoods, for training loops of one's own.

``NeighborLoader`` is what PyG's ``NeighborLoader`` and DGL's ``DataLoader`` with a
``NeighborSampler`` are to PyTorch users: it splits the input nodes into batches (shuffled per
epoch when asked), samples each batch's neighbourhood with ``edgeattn.sample_neighbors`` (one
bipartite ``Block`` per layer, outermost hop first) and, when given features, gathers the rows the
first layer reads. A background thread samples the next batches while the caller trains on the
current one (``prefetch``): the sampler and the gather run without the GIL.

Everything is seeded: batch ``b`` of epoch ``e`` holds the same seeds and the same sample whatever
the prefetch depth, the thread count or what ran before (``sampling_seed(e, b)`` is its sampler
seed), so a run can be repeated or resumed from an epoch (``set_epoch``).

Example (edgeattn.torch layers on the blocks)::

    loader = edgeattn.NeighborLoader(ds.graph, fanouts=[10, 5], input_nodes=train_idx,
                                     batch_size=1024, shuffle=True, features=x)   # x: torch [N, F]
    for epoch in range(epochs):
        for batch in loader:
            h = batch.x
            for conv, block in zip(convs, batch.blocks):     # conv1 (outermost hop) first
                h = conv((h, h[: block.num_dst]), torch.from_numpy(block.graph.edge_index()))
            loss = F.cross_entropy(h, y[torch.from_numpy(batch.seeds)])
            ...
"""

from __future__ import annotations

import atexit
import operator
import queue
import threading
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from . import _edgeattn

__all__ = ["MiniBatch", "NeighborLoader"]


@dataclass
class MiniBatch:
    """One batch of a NeighborLoader: its seeds' sampled neighbourhood.

    ``seeds``: int64 [B] the batch's seed nodes (the last layer's output rows, in this order);
    ``input_nodes``: int64 [n] the nodes whose features the first layer reads (``blocks[0].src_nodes``);
    both are the batch's own (writable) arrays, so ``torch.from_numpy`` takes them as they are;
    ``blocks``: one Block per layer, outermost hop first (DGL's order);
    ``x``: the features of ``input_nodes`` (same type as the loader's ``features``: float32 ones gathered
    by ``edgeattn.gather_rows``, others by ``numpy.take`` / ``index_select``), or None;
    ``subgraph``: the SampledSubgraph that owns the blocks; ``epoch``, ``index``: where the batch is.
    """

    seeds: np.ndarray
    input_nodes: np.ndarray
    blocks: list
    x: Any
    subgraph: Any
    epoch: int
    index: int


def _index_array(nodes, what: str) -> np.ndarray:
    a = np.asarray(nodes)
    if a.ndim != 1:
        raise _edgeattn.ShapeError(f"NeighborLoader: {what} has shape {a.shape}, expected one dimension")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise _edgeattn.InvalidArgument(f"NeighborLoader: {what} has dtype {a.dtype}, expected integers")
    if a.size and a.dtype.kind == "u" and a.max() > np.iinfo(np.int64).max:
        k = int(np.argmax(a > np.iinfo(np.int64).max))
        raise _edgeattn.GraphError(f"NeighborLoader: {what}[{k}] is {a[k]}, beyond any node id")
    return a.astype(np.int64, copy=True)


def _integer(value, what: str) -> int:
    """value as an int: Python and NumPy integers (and bools' 0/1 are refused too), not floats."""
    if isinstance(value, bool) or isinstance(value, np.bool_):
        raise _edgeattn.InvalidArgument(f"NeighborLoader: {what} is {value!r}, expected an integer")
    try:
        return operator.index(value)
    except TypeError:
        raise _edgeattn.InvalidArgument(
            f"NeighborLoader: {what} is {value!r} ({type(value).__name__}), expected an integer") from None


# The prefetching threads running now, each with its stop event. At interpreter exit (an iteration
# left unfinished at the end of a script) they are stopped and joined while Python still runs: a
# daemon thread that came back from the sampler after Python began finalizing would be ended there.
_running: set = set()
_running_lock = threading.Lock()


@atexit.register
def _stop_running_workers() -> None:
    with _running_lock:
        running = list(_running)
    for stop, _ in running:
        stop.set()
    for _, worker in running:
        worker.join()


def _gatherable(features) -> bool:
    """Whether edgeattn.gather_rows takes the features as they are (float32, C-contiguous, CPU)."""
    if hasattr(features, "index_select"):  # torch
        import torch

        return (features.dtype == torch.float32 and features.device.type == "cpu" and features.is_contiguous()
                and features.dim() >= 1 and not features.requires_grad)
    return (isinstance(features, np.ndarray) and features.dtype == np.float32 and features.flags.c_contiguous
            and features.ndim >= 1)


class NeighborLoader:
    """Seeded mini-batches with sampled neighbourhoods (PyG's NeighborLoader, DGL's DataLoader).

    graph: the Graph to sample (square, CSR by destination); fanouts: neighbours per node at hop 1
    (the seeds), 2, ... as in ``sample_neighbors`` (-1: all); input_nodes: the seeds to batch
    (int array or list, distinct; default every node); batch_size: seeds per batch; shuffle: a new
    seeded permutation of input_nodes every epoch (else their order); drop_last: leave out a last
    batch smaller than batch_size; replace, weights, order: as ``sample_neighbors`` (weights: the
    edge weights to sample by, e.g. ``Dataset.edge_weight``), except that ``order`` defaults to
    ``"ascending"`` here (each block's new sources numbered by ascending node id, the faster order
    to gather; ``sample_neighbors`` defaults to DGL's and PyG's ``"appearance"``); seed: keys the shuffles and every
    sample; features: optional NumPy array or torch tensor [N, ...] whose rows ``input_nodes`` each
    batch carries as ``x``; prefetch: batches sampled ahead on a background thread (0: sample on
    the caller's thread).

    Iterating gives the batches of one epoch, as ``MiniBatch`` objects; each new iteration is the
    next epoch (``set_epoch`` chooses it). Errors of the sampler (a bad weight, say) are raised by
    the loop that meets them.
    """

    def __init__(self, graph, fanouts: Sequence[int], input_nodes=None, *, batch_size: int = 1,
                 shuffle: bool = False, drop_last: bool = False, replace: bool = False, weights=None,
                 order: str = "ascending", seed: int = 0, features=None, prefetch: int = 1):
        batch_size = _integer(batch_size, "batch_size")
        prefetch = _integer(prefetch, "prefetch")
        seed = _integer(seed, "seed")
        if isinstance(fanouts, (str, bytes)) or not hasattr(fanouts, "__iter__"):
            raise _edgeattn.InvalidArgument(
                f"NeighborLoader: fanouts is {fanouts!r}, expected a sequence of integers (one per hop)")
        fanouts = [_integer(k, f"fanouts[{i}]") for i, k in enumerate(fanouts)]
        if batch_size < 1:
            raise _edgeattn.InvalidArgument(f"NeighborLoader: batch_size is {batch_size}, expected >= 1")
        if prefetch < 0:
            raise _edgeattn.InvalidArgument(f"NeighborLoader: prefetch is {prefetch}, expected >= 0")
        if seed < 0 or seed >= 2**64:
            raise _edgeattn.InvalidArgument(f"NeighborLoader: seed is {seed}, expected in [0, 2**64)")
        if not isinstance(graph, _edgeattn.Graph):
            raise _edgeattn.InvalidArgument(
                f"NeighborLoader: graph is a {type(graph).__name__}, expected an edgeattn.Graph (e.g. "
                f"Dataset.graph, Graph.from_edge_index)")
        n = graph.num_dst
        nodes = np.arange(n, dtype=np.int64) if input_nodes is None else _index_array(input_nodes, "input_nodes")
        if nodes.size:
            bad = np.flatnonzero((nodes < 0) | (nodes >= n))
            if bad.size:
                raise _edgeattn.GraphError(
                    f"NeighborLoader: input_nodes[{bad[0]}] is {nodes[bad[0]]}, expected in [0, {n})")
            values, counts = np.unique(nodes, return_counts=True)
            if (counts > 1).any():
                v = values[np.argmax(counts > 1)]
                where = np.flatnonzero(nodes == v)
                raise _edgeattn.GraphError(
                    f"NeighborLoader: input_nodes[{where[1]}] is {v}, which appears earlier at "
                    f"input_nodes[{where[0]}]: expected distinct nodes")
        if features is not None and (not hasattr(features, "shape") or len(features.shape) < 1):
            raise _edgeattn.InvalidArgument(
                f"NeighborLoader: features is a {type(features).__name__}"
                f"{' of shape ' + str(tuple(features.shape)) if hasattr(features, 'shape') else ''}, expected a "
                f"NumPy array or torch tensor with one row per node")
        if features is not None and len(features) != n:
            raise _edgeattn.ShapeError(
                f"NeighborLoader: features have {len(features)} rows, expected one per node ({n})")
        self.graph = graph
        self.fanouts = fanouts
        self.input_nodes = nodes
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.replace = bool(replace)
        self.weights = None if weights is None else np.ascontiguousarray(weights)
        self.order = order
        self.seed = seed
        self.features = features
        self._gather_in_library = features is not None and _gatherable(features)
        self.prefetch = prefetch
        self._epoch = 0
        # Fail now, not in the first loop, on what the sampler would refuse for any batch.
        _edgeattn.sample_neighbors(graph, nodes[:0], self.fanouts, self.replace, 0, order, self.weights)

    def __len__(self) -> int:
        """Batches per epoch."""
        full, rest = divmod(len(self.input_nodes), self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)

    @property
    def epoch(self) -> int:
        """The epoch the next iteration runs."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration epoch ``epoch`` (its shuffle and samples), e.g. to resume."""
        if epoch < 0:
            raise _edgeattn.InvalidArgument(f"NeighborLoader: epoch is {epoch}, expected >= 0")
        self._epoch = int(epoch)

    def sampling_seed(self, epoch: int, index: int) -> int:
        """The sample_neighbors seed of batch ``index`` of epoch ``epoch``."""
        return int(np.random.SeedSequence([self.seed, 1, epoch, index]).generate_state(1, np.uint64)[0])

    def epoch_order(self, epoch: int) -> np.ndarray:
        """The input nodes in epoch ``epoch``'s order (the batches are its consecutive slices)."""
        if not self.shuffle:
            return self.input_nodes
        return np.random.default_rng([self.seed, 0, epoch]).permutation(self.input_nodes)

    def _batch(self, epoch: int, index: int, seeds: np.ndarray) -> MiniBatch:
        sub = _edgeattn.sample_neighbors(self.graph, seeds, self.fanouts, self.replace,
                                         self.sampling_seed(epoch, index), self.order, self.weights)
        # Owned, writable copies (the subgraph's are read-only views): torch.from_numpy takes them as
        # they are.
        rows = np.array(sub.input_nodes)
        x = None
        if self.features is not None:
            is_torch = hasattr(self.features, "index_select")
            if self._gather_in_library:  # float32, C-contiguous, on the CPU: edgeattn.gather_rows
                x = _edgeattn.gather_rows(self.features, rows)
                if is_torch:
                    import torch

                    x = torch.from_numpy(x)
            elif is_torch:
                import torch

                x = self.features.index_select(0, torch.from_numpy(rows))
            else:
                x = np.take(self.features, rows, axis=0)
        return MiniBatch(seeds=np.array(sub.seeds), input_nodes=rows, blocks=sub.blocks, x=x, subgraph=sub,
                         epoch=epoch, index=index)

    def __iter__(self) -> Iterator[MiniBatch]:
        epoch = self._epoch
        self._epoch += 1
        order = self.epoch_order(epoch)
        slices = [order[b * self.batch_size:(b + 1) * self.batch_size] for b in range(len(self))]
        if self.prefetch == 0:
            return (self._batch(epoch, b, s) for b, s in enumerate(slices))
        return self._prefetched(epoch, slices)

    def _prefetched(self, epoch: int, slices) -> Iterator[MiniBatch]:
        ready: queue.Queue = queue.Queue(maxsize=self.prefetch)
        stop = threading.Event()

        def produce():
            for b, s in enumerate(slices):
                if stop.is_set():
                    return
                try:
                    item = (self._batch(epoch, b, s), None)
                except BaseException as e:  # handed to the consumer, raised there
                    item = (None, e)
                while not stop.is_set():
                    try:
                        ready.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if item[1] is not None:
                    return

        worker = threading.Thread(target=produce, name="edgeattn-NeighborLoader", daemon=True)
        entry = (stop, worker)
        with _running_lock:
            _running.add(entry)
        worker.start()
        try:
            for _ in slices:
                batch, error = ready.get()
                if error is not None:
                    raise error
                yield batch
        finally:  # the loop ended, broke out or raised: the worker stops at its next batch
            stop.set()
            worker.join()
            with _running_lock:
                _running.discard(entry)

