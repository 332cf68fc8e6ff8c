"""How much of a sampled PyTorch epoch edgeattn.NeighborLoader's background sampling hides.

One epoch of a 3-layer edgeattn.torch GATConv model (8 heads x 8, then the classes) over the
training nodes of an .npz dataset, batches of 1024 with fanouts 15,10,5, the loader sampling and
gathering on its thread (--prefetch 1, the default) or on the training thread (--prefetch 0); and
the loader alone (sampling + gather, no model). Prints one JSON object per configuration.

    PYTHONPATH=build/release/python .venv/bin/python bench/python/neighbor_loader_bench.py \
        --dataset build/peers/inputs/sbm_products_250k.npz --threads 2
"""

import argparse
import json
import time

import numpy as np
import torch

import edgeattn as ea
import edgeattn.torch as et


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--fanouts", default="15,10,5")
    p.add_argument("--epochs", type=int, default=2, help="timed epochs per configuration (after one warm-up)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    ds = ea.load_dataset_path(args.dataset)
    x = torch.from_numpy(np.array(ds.dense_features))
    y = torch.from_numpy(np.array(ds.labels)).long()
    train = ds.split()["train"]
    fanouts = [int(k) for k in args.fanouts.split(",")]
    dims = [x.shape[1], 64, 64]
    torch.manual_seed(0)
    convs = torch.nn.ModuleList([et.GATConv(dims[l], 8, heads=8) for l in range(len(fanouts) - 1)] +
                                [et.GATConv(64, ds.num_classes, heads=1)])
    opt = torch.optim.Adam(convs.parameters(), lr=0.01)

    def epoch(loader, train_model):
        t0 = time.perf_counter()
        for b in loader:
            if not train_model:
                continue
            h = b.x
            for l, (conv, block) in enumerate(zip(convs, b.blocks)):
                h = conv((h, h[: block.num_dst]), torch.from_numpy(block.graph.edge_index()))
                if l + 1 < len(convs):
                    h = torch.nn.functional.elu(h)
            loss = torch.nn.functional.cross_entropy(h, y[torch.from_numpy(b.seeds)])
            opt.zero_grad()
            loss.backward()
            opt.step()
        return time.perf_counter() - t0

    for prefetch, train_model in ((0, False), (1, False), (0, True), (1, True)):
        loader = ea.NeighborLoader(ds.graph, fanouts, train, batch_size=args.batch_size, shuffle=True, seed=1,
                                   features=x, prefetch=prefetch)
        epoch(loader, train_model)  # warm-up
        times = [epoch(loader, train_model) for _ in range(args.epochs)]
        print(json.dumps({"prefetch": prefetch, "model": train_model, "batches": len(loader),
                          "epoch_s": [round(t, 3) for t in times], "threads": args.threads}), flush=True)


if __name__ == "__main__":
    main()
