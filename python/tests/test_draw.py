"""Tests of doppio.draw: node labels and colours, phase filtering, the
graph's nodes and edges, and rendered files."""

import os

import pytest
from google.protobuf import text_format

from doppio import draw
from doppio.proto import doppio_pb2

PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'

TINY_NET = """
name: "tiny"
layer { name: "data" type: "Data" top: "data" top: "label"
        data_param { batch_size: 64 } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        param { lr_mult: 1 } param { lr_mult: 2 }
        convolution_param { num_output: 20 kernel_size: 5 stride: 2 pad: 1 } }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
        pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layer { name: "relu1" type: "ReLU" bottom: "pool1" top: "pool1" }
layer { name: "ip1" type: "InnerProduct" bottom: "pool1" top: "ip1"
        inner_product_param { num_output: 10 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip1" bottom: "label"
        top: "loss" include { phase: TRAIN } }
layer { name: "prob" type: "Softmax" bottom: "ip1" top: "prob"
        exclude { phase: TRAIN } }
"""


def tiny_net():
    return text_format.Parse(TINY_NET, doppio_pb2.NetParameter())


def layer(name):
    return next(lay for lay in tiny_net().layer if lay.name == name)


def test_layer_label_for_horizontal_and_vertical_layouts():
    conv = layer('conv1')
    assert draw.get_layer_label(conv, 'LR') == (
        r'"conv1\n(Convolution)\nkernel size: 5\nstride: 2\npad: 1"')
    assert draw.get_layer_label(conv, 'TB') == (
        '"conv1 (Convolution) kernel size: 5 stride: 2 pad: 1"')
    assert draw.get_layer_label(layer('pool1'), 'BT') == (
        '"pool1 (Pooling MAX) kernel size: 3 stride: 2 pad: 0"')
    assert draw.get_layer_label(layer('relu1'), 'LR') == r'"relu1\n(ReLU)"'


def test_layer_label_with_learning_rate_multipliers():
    assert draw.get_layer_label(layer('conv1'), 'TB', display_lrm=True) == (
        '"conv1 (Convolution) kernel size: 5 stride: 2 pad: 1 '
        'lr mult: 1.0, 2.0"')
    assert draw.get_layer_label(layer('ip1'), 'TB', display_lrm=True) == (
        '"ip1 (InnerProduct) lr mult: 1.0, 1.0"')
    frozen = doppio_pb2.LayerParameter(name='f', type='InnerProduct')
    frozen.param.add(lr_mult=0)
    frozen.param.add(lr_mult=0)
    assert draw.get_layer_label(frozen, 'TB', display_lrm=True) == \
        '"f (InnerProduct)"'


def test_rectangular_kernels_and_awkward_names():
    pool = doppio_pb2.LayerParameter(name='p|{x}', type='Pooling')
    pool.pooling_param.kernel_h = 2
    pool.pooling_param.kernel_w = 3
    pool.pooling_param.pool = doppio_pb2.PoolingParameter.AVE
    assert draw.get_layer_label(pool, 'TB') == (
        r'"p\|\{x\} (Pooling AVE) kernel size: 2x3 stride: 1 pad: 0"')


def test_edge_labels():
    assert draw.get_edge_label(layer('data')) == 'Batch 64'
    assert draw.get_edge_label(layer('conv1')) == '20'
    assert draw.get_edge_label(layer('ip1')) == '10'
    assert draw.get_edge_label(layer('relu1')) == '""'
    deconv = doppio_pb2.LayerParameter(type='Deconvolution')
    deconv.convolution_param.num_output = 7
    assert draw.get_edge_label(deconv) == '7'


def test_lr_mult_defaults_and_errors():
    ip = doppio_pb2.LayerParameter(name='ip', type='InnerProduct')
    assert draw.get_layer_lr_mult(ip) == (1.0, 1.0)
    ip.param.add(lr_mult=0.5)
    assert draw.get_layer_lr_mult(ip) == (0.5, 1.0)
    ip.param.add()  # lr_mult left at its default of 1
    assert draw.get_layer_lr_mult(ip) == (0.5, 1.0)
    ip.param.add(lr_mult=3)
    with pytest.raises(ValueError, match="'ip' has 3 param entries"):
        draw.get_layer_lr_mult(ip)
    with pytest.raises(ValueError, match='ReLU layers do not have'):
        draw.get_layer_lr_mult(layer('relu1'))


def test_colours_by_layer_type():
    assert draw.choose_color_by_layertype('Convolution') == '#FF5050'
    assert draw.choose_color_by_layertype('Deconvolution') == '#FF5050'
    assert draw.choose_color_by_layertype('Pooling') == '#FF9900'
    assert draw.choose_color_by_layertype('InnerProduct') == '#CC33FF'
    assert draw.choose_color_by_layertype('ReLU') == '#6495ED'


def test_pooling_types():
    assert draw.get_pooling_types_dict() == {0: 'MAX', 1: 'AVE',
                                             2: 'STOCHASTIC'}


def node_names(graph):
    return sorted(node.get_name().strip('"') for node in graph.get_nodes())


def edge_pairs(graph):
    return sorted((e.get_source().strip('"'), e.get_destination().strip('"'))
                  for e in graph.get_edges())


def test_graph_nodes_edges_and_styles():
    graph = draw.get_pydot_graph(tiny_net(), 'LR')
    assert graph.get_name() == 'tiny'
    assert graph.get_rankdir() == 'LR'
    assert node_names(graph) == sorted([
        'data_Data', 'conv1_Convolution', 'pool1_Pooling', 'relu1_ReLU',
        'ip1_InnerProduct', 'loss_SoftmaxWithLoss', 'prob_Softmax',
        'data_blob', 'label_blob', 'conv1_blob', 'pool1_blob', 'ip1_blob',
        'loss_blob', 'prob_blob'])
    assert ('conv1_blob', 'pool1_Pooling') in edge_pairs(graph)
    assert ('relu1_ReLU', 'pool1_blob') in edge_pairs(graph)
    # One edge per bottom and per top: 2 + 2 + 2 + 2 + 2 + 3 + 2.
    assert len(graph.get_edges()) == 15
    styles = {node.get_name().strip('"'): node.get_attributes()
              for node in graph.get_nodes()}
    assert styles['relu1_ReLU']['fillcolor'] == '#90EE90'  # in place
    assert styles['conv1_Convolution']['fillcolor'] == '#FF5050'
    assert styles['loss_blob']['shape'] == 'octagon'
    assert draw.LAYER_STYLE_DEFAULT['fillcolor'] == '#6495ED'  # unchanged
    labels = {(e.get_source().strip('"'), e.get_destination().strip('"')):
              e.get_label() for e in graph.get_edges()}
    assert labels[('conv1_Convolution', 'conv1_blob')] == '20'
    assert labels[('data_Data', 'data_blob')] == 'Batch 64'
    assert '"data_Data" -> "data_blob"  [label="Batch 64"]' in \
        graph.to_string()
    unlabelled = draw.get_pydot_graph(tiny_net(), 'LR', label_edges=False)
    assert {e.get_label() for e in unlabelled.get_edges()} == {'""'}


def test_phase_filter():
    train = draw.get_pydot_graph(tiny_net(), 'TB', phase=doppio_pb2.TRAIN)
    test = draw.get_pydot_graph(tiny_net(), 'TB', phase=doppio_pb2.TEST)
    assert 'loss_SoftmaxWithLoss' in node_names(train)
    assert 'prob_Softmax' not in node_names(train)
    assert 'loss_SoftmaxWithLoss' not in node_names(test)
    assert 'prob_Softmax' in node_names(test)
    both = tiny_net()
    both.layer[0].include.add(phase=doppio_pb2.TRAIN)
    both.layer[0].exclude.add(phase=doppio_pb2.TEST)
    with pytest.raises(ValueError, match="'data' has both include"):
        draw.get_pydot_graph(both, 'LR', phase=doppio_pb2.TEST)


def test_draw_net_returns_png_bytes():
    image = draw.draw_net(tiny_net(), 'LR')
    assert image.startswith(PNG_SIGNATURE)
    svg = draw.draw_net(tiny_net(), 'TB', ext='svg', display_lrm=True)
    assert b'<svg' in svg and b'lr mult: 1.0, 2.0' in svg


def test_draw_net_to_file(tmp_path):
    png = tmp_path / 'net.png'
    draw.draw_net_to_file(tiny_net(), str(png), phase=doppio_pb2.TEST)
    assert png.read_bytes().startswith(PNG_SIGNATURE)
    raw = tmp_path / 'net.raw'
    draw.draw_net_to_file(tiny_net(), str(raw), 'TB')
    text = raw.read_text()
    assert text.startswith('digraph tiny {')
    assert '"conv1_Convolution" -> "conv1_blob"' in text
    with pytest.raises(ValueError, match='extension'):
        draw.draw_net_to_file(tiny_net(), str(tmp_path / 'noext'))


def repo_prototxts():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                        '..')
    for folder in ('models', 'examples'):
        for cwd, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if name.endswith('.prototxt') and 'solver' not in name:
                    yield os.path.join(cwd, name)


def test_every_repo_net_makes_a_graph():
    paths = list(repo_prototxts())
    assert paths, 'no prototxt files found under models/ or examples/'
    for path in paths:
        with open(path) as f:
            net = text_format.Parse(f.read(), doppio_pb2.NetParameter())
        graph = draw.get_pydot_graph(net, 'LR', phase=doppio_pb2.TEST)
        assert graph.get_nodes(), path
        assert graph.to_string().startswith('digraph')
