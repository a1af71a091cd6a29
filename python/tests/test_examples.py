"""examples/python: every script compiles, and draw_net.py (which needs no data set) runs.
The others need MNIST and trained weights; docs/python.md shows their runs."""
import glob
import os
import py_compile
import subprocess
import sys

from conftest import PYTHON_TREE

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'examples',
                        'python')


def test_every_example_compiles(tmp_path):
    scripts = glob.glob(os.path.join(EXAMPLES, '*.py')) + glob.glob(
        os.path.join(EXAMPLES, 'layers', '*.py'))
    assert len(scripts) >= 7
    for script in scripts:
        py_compile.compile(script, cfile=str(tmp_path / 'c.pyc'), doraise=True)


def test_draw_net_writes_a_png(tmp_path):
    output = tmp_path / 'lenet.png'
    model = os.path.join(EXAMPLES, '..', '..', 'models', 'lenet', 'train_val.prototxt')
    result = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, 'draw_net.py'), model, str(output),
         '--rankdir', 'TB', '--phase', 'TRAIN'],
        env=dict(os.environ, PYTHONPATH=PYTHON_TREE), capture_output=True, text=True,
        timeout=120)
    assert result.returncode == 0, result.stderr
    assert output.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_the_python_data_layer_example_trains_in_doppio_train(tmp_path):
    """examples/python/lenet_python_data*.prototxt on small idx files made here (MNIST's
    format: a 16-byte header for images, 8 for labels), run by `doppio train`."""
    import numpy as np
    from conftest import DOPPIO
    repo = os.path.join(EXAMPLES, '..', '..')
    rng = np.random.RandomState(0)
    for name, count in (('train', 256), ('t10k', 256)):
        np.concatenate([np.zeros(16, np.uint8), rng.randint(0, 256, count * 784)]).astype(
            np.uint8).tofile(str(tmp_path / ('%s-images-idx3-ubyte' % name)))
        np.concatenate([np.zeros(8, np.uint8), rng.randint(0, 10, count)]).astype(
            np.uint8).tofile(str(tmp_path / ('%s-labels-idx1-ubyte' % name)))
    with open(os.path.join(EXAMPLES, 'lenet_python_data.prototxt')) as f:
        net = f.read().replace('data/mnist/', str(tmp_path) + '/')
    (tmp_path / 'net.prototxt').write_text(net)
    with open(os.path.join(EXAMPLES, 'lenet_python_data_solver.prototxt')) as f:
        solver = f.read().replace('examples/python/lenet_python_data.prototxt',
                                  str(tmp_path / 'net.prototxt'))
    solver = solver.replace('examples/python/lenet_python_data', str(tmp_path / 'snap'))
    (tmp_path / 'solver.prototxt').write_text(solver)
    result = subprocess.run(
        [DOPPIO, 'train', '--solver=' + str(tmp_path / 'solver.prototxt'), '--iterations=4'],
        cwd=repo, env=dict(os.environ, PYTHONPATH=os.path.join(EXAMPLES, 'layers')),
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert 'Optimization Done' in result.stderr
