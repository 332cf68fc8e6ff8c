import ast
import inspect
import os

import edgeattn
import edgeattn._edgeattn as core

STUB = os.path.join(os.path.dirname(__file__), "..", "src", "edgeattn", "_edgeattn.pyi")


def stub_names():
    tree = ast.parse(open(STUB).read())
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            top.add(node.name)
            members[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        elif isinstance(node, ast.FunctionDef):
            top.add(node.name)
    return top, members


def test_stub_matches_the_compiled_module():
    top, members = stub_names()
    public = {n for n in dir(core) if not n.startswith("_")}
    assert top == public, "regenerate with bindings/python/gen_stubs.sh"
    for cls, names in members.items():
        actual = {n for n in vars(getattr(core, cls)) if not n.startswith("_")}
        assert actual <= names | {"__init__"}, (cls, actual - names)


def test_every_export_is_documented_and_present():
    for name in edgeattn.__all__:
        obj = getattr(edgeattn, name)
        assert inspect.getdoc(obj), name
    assert os.path.exists(os.path.join(os.path.dirname(STUB), "py.typed"))


def test_views_and_results_release_their_owners():
    import gc
    import sys

    import numpy as np

    g = edgeattn.erdos_renyi_graph(7, 20, seed=1)
    x = np.ones((7, 2, 4), np.float32)
    r = edgeattn.attention_forward(g, query=x, key=x, value=x)
    base_r, base_g = sys.getrefcount(r), sys.getrefcount(g)
    views = [r.out, r.row_stats, g.indptr, g.indices]
    assert sys.getrefcount(r) == base_r + 2 and sys.getrefcount(g) == base_g + 2
    del views
    gc.collect()
    assert sys.getrefcount(r) == base_r and sys.getrefcount(g) == base_g
    for _ in range(3):
        edgeattn.attention_forward(g, query=x, key=x, value=x).out  # temporaries
    assert sys.getrefcount(g) == base_g
