"""The package's layers, as docs/architecture.md states them:

    registry, utils -> backends, structures, compat, datasets -> models
        -> engine, ptq, deploy -> analysis -> apis

A module imports from its own layer or lower ones, never from a higher one.
Imports inside functions are held to the same rule, except the few listed
in :data:`DEFERRED` with the reason each is allowed. No two modules import
each other, directly or around a circle, at import time or in a function.
"""
import ast
import os
import os.path as osp
import subprocess
import sys
from typing import Dict, Iterator, List, Set, Tuple

import pytest

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
PACKAGE = 'mmrazor_quant'

#: Rank of each subpackage (and of the package's own ``__init__``).
LAYERS: Dict[str, int] = {
    '': 0, 'registry': 0, 'utils': 0,
    'backends': 1, 'structures': 1, 'compat': 1, 'datasets': 1,
    'models': 2, 'frontends': 2,
    'engine': 3, 'ptq': 3, 'deploy': 3,
    'analysis': 4,
    'apis': 5,
}

#: Upward imports done inside a function, on purpose: (importing module,
#: imported module) -> why.
DEFERRED = {
    ('mmrazor_quant.models.algorithms.mm_architecture',
     'mmrazor_quant.deploy.deploy_model'):
    "MMRazor's MMArchitectureQuant.get_deploy_model() builds the deploy "
    'model on demand',
    ('mmrazor_quant.models.quantizers.mmrazor_compat',
     'mmrazor_quant.deploy'):
    "MMRazor's quantizer.export_onnx() exports on demand",
}

#: Runtime packages that ``import mmrazor_quant.models`` must not load.
HEAVY = ('onnx', 'onnxruntime', 'onnxscript', 'openvino')


def _subpackage(module: str) -> str:
    parts = module.split('.')
    return parts[1] if len(parts) > 1 else ''


def _module_name(path: str, root: str) -> str:
    rel = osp.relpath(path, root)[:-len('.py')].replace(os.sep, '.')
    return rel[:-len('.__init__')] if rel.endswith('.__init__') else rel


def _imports(tree: ast.Module, module: str,
             is_package: bool) -> Iterator[Tuple[str, bool]]:
    """``(imported module, inside a function)`` of every import."""
    package = module if is_package else module.rsplit('.', 1)[0]

    def visit(node: ast.AST, in_function: bool) -> Iterator[Tuple[str,
                                                                  bool]]:
        for child in ast.iter_child_nodes(node):
            deferred = in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, in_function
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split('.')[:len(package.split('.')) -
                                              child.level + 1]
                    name = '.'.join(base + ([child.module]
                                            if child.module else []))
                else:
                    name = child.module or ''
                yield name, in_function
            yield from visit(child, deferred)

    yield from visit(tree, False)


def find_upward_imports(root: str) -> List[str]:
    """Every import in the package under ``root`` that reaches a higher
    layer, as ``'importer -> imported (at import time|in a function)'``.

    Raises:
        AssertionError: If a subpackage has no layer in :data:`LAYERS`.
    """
    found = []
    for folder, _, files in os.walk(osp.join(root, PACKAGE)):
        for file in sorted(files):
            if not file.endswith('.py'):
                continue
            path = osp.join(folder, file)
            module = _module_name(path, root)
            own = _subpackage(module)
            assert own in LAYERS, f'{module}: subpackage {own!r} has no ' \
                'layer in LAYERS (and docs/architecture.md)'
            with open(path) as f:
                tree = ast.parse(f.read(), path)
            for name, deferred in _imports(tree, module,
                                           file == '__init__.py'):
                if name != PACKAGE and not name.startswith(PACKAGE + '.'):
                    continue
                target = _subpackage(name)
                if LAYERS.get(target, -1) <= LAYERS[own]:
                    continue
                if deferred and any(name.startswith(t) and module == m
                                    for m, t in DEFERRED):
                    continue
                where = 'in a function' if deferred else 'at import time'
                found.append(f'{module} -> {name} ({where})')
    return found


def test_no_module_imports_from_a_higher_layer():
    assert find_upward_imports(ROOT) == []


def _import_graph(root: str) -> Dict[str, Set[str]]:
    """``{module: modules it imports}`` within the package, at import time
    and in functions. ``from pkg import name`` imports the module
    ``pkg.name`` if there is one, else ``pkg`` (its ``__init__``)."""
    paths = {}
    for folder, _, files in os.walk(osp.join(root, PACKAGE)):
        for file in files:
            if file.endswith('.py'):
                path = osp.join(folder, file)
                paths[_module_name(path, root)] = path
    graph = {}
    for module, path in paths.items():
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        is_package = path.endswith('__init__.py')
        package = module if is_package else module.rsplit('.', 1)[0]
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split('.')
                    base = parts[:len(parts) - node.level + 1]
                    name = '.'.join(base + ([node.module]
                                            if node.module else []))
                else:
                    name = node.module or ''
                for alias in node.names:
                    sub = f'{name}.{alias.name}'
                    found.add(sub if sub in paths else name)
        graph[module] = {m for m in found if m in paths and m != module}
    return graph


def find_import_circles(root: str) -> List[List[str]]:
    """Every group of modules that import each other around a circle (the
    strongly connected components of the import graph with more than one
    module), each sorted."""
    graph = _import_graph(root)
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    circles = []

    def visit(module: str) -> None:
        # Tarjan's algorithm
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(circles)


def test_no_import_circle():
    assert find_import_circles(ROOT) == []


def test_an_import_circle_is_found(tmp_path):
    root = _synthetic_package(
        tmp_path, 'def f():\n    from ..deploy.other import g\n')
    (tmp_path / PACKAGE / 'deploy' / 'other.py').write_text(
        'from mmrazor_quant.models import new\n')
    assert find_import_circles(root) == [
        ['mmrazor_quant.deploy.other', 'mmrazor_quant.models.new']]


def test_every_subpackage_has_a_layer():
    subpackages = {
        d for d in os.listdir(osp.join(ROOT, PACKAGE))
        if osp.isfile(osp.join(ROOT, PACKAGE, d, '__init__.py'))
    }
    assert subpackages <= set(LAYERS)


def _synthetic_package(tmp_path, source: str) -> str:
    """A copy of the package layout with one module holding ``source``."""
    for sub in ('models', 'deploy'):
        folder = tmp_path / PACKAGE / sub
        folder.mkdir(parents=True)
        (folder / '__init__.py').write_text('')
    (tmp_path / PACKAGE / '__init__.py').write_text('')
    (tmp_path / PACKAGE / 'models' / 'new.py').write_text(source)
    return str(tmp_path)


@pytest.mark.parametrize('source, expected', [
    ('from mmrazor_quant.deploy import export_model\n',
     'mmrazor_quant.models.new -> mmrazor_quant.deploy (at import time)'),
    ('from ..deploy.onnx_export import export_onnx\n',
     'mmrazor_quant.models.new -> mmrazor_quant.deploy.onnx_export '
     '(at import time)'),
    ('def f():\n    import mmrazor_quant.analysis\n',
     'mmrazor_quant.models.new -> mmrazor_quant.analysis (in a function)'),
    ('try:\n    import mmrazor_quant.apis as a\nexcept ImportError:\n'
     '    a = None\n',
     'mmrazor_quant.models.new -> mmrazor_quant.apis (at import time)'),
])
def test_an_upward_import_is_found(tmp_path, source, expected):
    assert find_upward_imports(_synthetic_package(tmp_path, source)) == [
        expected]


def test_same_or_lower_layer_imports_pass(tmp_path):
    source = ('from mmrazor_quant.registry import MODELS\n'
              'from ..structures import QSchema\n'
              'from . import other\n')
    assert find_upward_imports(_synthetic_package(tmp_path, source)) == []


def test_importing_models_loads_no_runtime():
    """``import mmrazor_quant.models`` (what building a quantized model
    needs) loads neither ONNX nor a runtime."""
    code = ('import sys, mmrazor_quant.models; '
            f'print(sorted(m for m in sys.modules if m.split(".")[0] in '
            f'{HEAVY!r}))')
    out = subprocess.run([sys.executable, '-c', code], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == '[]', out.stdout
