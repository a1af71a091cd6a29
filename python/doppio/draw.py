"""Draw a net (a NetParameter) as a graph with pydot and graphviz.

pycaffe's ``caffe.draw``: layers are boxes coloured by type, blobs are
grey octagons, and edges from a layer to its tops can carry the layer's
output count.  In-place layers (ReLU and the like) are drawn in green.
"""

import pydot

from .proto import doppio_pb2 as caffe_pb2

LAYER_STYLE_DEFAULT = {'shape': 'record',
                       'fillcolor': '#6495ED',
                       'style': 'filled'}
NEURON_LAYER_STYLE = {'shape': 'record',
                      'fillcolor': '#90EE90',
                      'style': 'filled'}
BLOB_STYLE = {'shape': 'octagon',
              'fillcolor': '#E0E0E0',
              'style': 'filled'}

_LEARNING_LAYERS = ('Convolution', 'Deconvolution', 'InnerProduct')


def _quote(text):
    """A graphviz quoted string: names may hold ':' (which graphviz
    would read as a port), '/', spaces or quotes."""
    return '"{}"'.format(text.replace('"', r'\"'))


def _record_text(text):
    """Text for a record-shaped node's label, where graphviz would read
    braces, bars and angle brackets as field syntax."""
    for char in '"{}|<>':
        text = text.replace(char, '\\' + char)
    return text


def get_pooling_types_dict():
    """Map each PoolMethod number to its name (0 -> 'MAX', ...)."""
    values = caffe_pb2.PoolingParameter.PoolMethod.DESCRIPTOR.values
    return {value.number: value.name for value in values}


def get_edge_label(layer):
    """The label of the edges from a layer to its tops: the batch size of
    a Data layer, the output count of a Convolution, Deconvolution or
    InnerProduct, and an empty label otherwise."""
    if layer.type == 'Data':
        return 'Batch ' + str(layer.data_param.batch_size)
    if layer.type in ('Convolution', 'Deconvolution'):
        return str(layer.convolution_param.num_output)
    if layer.type == 'InnerProduct':
        return str(layer.inner_product_param.num_output)
    return '""'


def get_layer_lr_mult(layer):
    """Return the (weights, bias) learning rate multipliers of a
    Convolution, Deconvolution or InnerProduct layer.

    A multiplier the layer does not set is 1, as in the solver.  Raises
    ValueError for other layer types and for layers with more than two
    ``param`` entries.
    """
    if layer.type not in _LEARNING_LAYERS:
        raise ValueError('{} layers do not have a learning rate multiplier'
                         .format(layer.type))
    mults = [spec.lr_mult for spec in layer.param]
    if len(mults) > 2:
        raise ValueError('layer {!r} has {} param entries; expected at most '
                         '2 (weights and bias)'.format(layer.name,
                                                       len(mults)))
    mults += [1.0] * (2 - len(mults))
    return tuple(mults)


def _size_text(values):
    """'3' for a square kernel, '3x5' for a rectangular one."""
    values = [int(v) for v in values]
    if len(set(values)) == 1:
        return str(values[0])
    return 'x'.join(str(v) for v in values)


def _spatial_params(layer):
    """(kernel, stride, pad) texts of a Convolution, Deconvolution or
    Pooling layer, from either the list fields or the _h/_w pairs."""
    if layer.type == 'Pooling':
        param = layer.pooling_param

        def pick(name, h_name, w_name):
            if param.HasField(h_name) or param.HasField(w_name):
                return [getattr(param, h_name), getattr(param, w_name)]
            return [getattr(param, name)]
        return (pick('kernel_size', 'kernel_h', 'kernel_w'),
                pick('stride', 'stride_h', 'stride_w'),
                pick('pad', 'pad_h', 'pad_w'))
    param = layer.convolution_param

    def pick(name, h_name, w_name, default):
        if param.HasField(h_name) or param.HasField(w_name):
            return [getattr(param, h_name), getattr(param, w_name)]
        return list(getattr(param, name)) or [default]
    return (pick('kernel_size', 'kernel_h', 'kernel_w', 1),
            pick('stride', 'stride_h', 'stride_w', 1),
            pick('pad', 'pad_h', 'pad_w', 0))


def get_layer_label(layer, rankdir, display_lrm=False):
    """Return the quoted graphviz label of a layer's node.

    The label holds the layer's name and type (with the pooling method),
    kernel, stride and pad for spatial layers, and with ``display_lrm``
    the learning rate multipliers of learning layers.  Parts are separated
    by spaces when the graph runs top to bottom ('TB', 'BT'), where width
    is free, and by line breaks otherwise.
    """
    separator = ' ' if rankdir in ('TB', 'BT') else r'\n'
    parts = [_record_text(layer.name)]
    if layer.type == 'Pooling':
        pool = get_pooling_types_dict()[layer.pooling_param.pool]
        parts.append('({} {})'.format(layer.type, pool))
    else:
        parts.append('({})'.format(layer.type))
    if layer.type in ('Convolution', 'Deconvolution', 'Pooling'):
        kernel, stride, pad = _spatial_params(layer)
        parts.append(separator.join([
            'kernel size: ' + _size_text(kernel),
            'stride: ' + _size_text(stride),
            'pad: ' + _size_text(pad)]))
    if display_lrm and layer.type in _LEARNING_LAYERS:
        lrm0, lrm1 = get_layer_lr_mult(layer)
        if lrm0 or lrm1:
            parts.append('lr mult: {:.1f}, {:.1f}'.format(lrm0, lrm1))
    # graphviz needs the quotes for labels holding colons.
    return '"{}"'.format(separator.join(parts))


def choose_color_by_layertype(layertype):
    """The fill colour of a layer's node: red for convolutions, orange for
    pooling, purple for inner products, blue for the rest."""
    if layertype in ('Convolution', 'Deconvolution'):
        return '#FF5050'
    if layertype == 'Pooling':
        return '#FF9900'
    if layertype == 'InnerProduct':
        return '#CC33FF'
    return '#6495ED'


def _in_phase(layer, phase):
    """Whether a layer is in the net built for ``phase``, by its include
    and exclude rules' phases (rules without a phase match any phase)."""
    if len(layer.include) and len(layer.exclude):
        raise ValueError('layer {!r} has both include and exclude rules'
                         .format(layer.name))

    def matches(rule):
        return not rule.HasField('phase') or rule.phase == phase
    if len(layer.include):
        return any(matches(rule) for rule in layer.include)
    return not any(matches(rule) for rule in layer.exclude)


def get_pydot_graph(caffe_net, rankdir, label_edges=True, phase=None,
                    display_lrm=False):
    """Return a pydot graph of a NetParameter.

    ``rankdir`` is graphviz's layout direction ('LR', 'TB', 'BT', 'RL').
    With ``label_edges`` the edges to a layer's tops carry
    get_edge_label().  ``phase`` (TRAIN or TEST) keeps only that phase's
    layers; None draws them all.  ``display_lrm`` adds learning rate
    multipliers to learning layers' labels.
    """
    graph = pydot.Dot(caffe_net.name or 'Net', graph_type='digraph',
                      rankdir=rankdir)
    nodes = {}
    edges = []
    for layer in caffe_net.layer:
        if phase is not None and not _in_phase(layer, phase):
            continue
        label = get_layer_label(layer, rankdir, display_lrm=display_lrm)
        layer_node = _quote('{}_{}'.format(layer.name, layer.type))
        in_place = (len(layer.bottom) == 1 and len(layer.top) == 1
                    and layer.bottom[0] == layer.top[0])
        if in_place:
            style = dict(NEURON_LAYER_STYLE)
        else:
            style = dict(LAYER_STYLE_DEFAULT,
                         fillcolor=choose_color_by_layertype(layer.type))
        nodes[layer_node] = pydot.Node(layer_node, label=label, **style)
        top_label = get_edge_label(layer) if label_edges else '""'
        for blob in layer.bottom:
            edges.append((_quote(blob + '_blob'), layer_node, '""'))
        for blob in layer.top:
            edges.append((layer_node, _quote(blob + '_blob'), top_label))
        for blob in list(layer.bottom) + list(layer.top):
            blob_node = _quote(blob + '_blob')
            nodes[blob_node] = pydot.Node(blob_node, label=_quote(blob),
                                          **BLOB_STYLE)
    for node in nodes.values():
        graph.add_node(node)
    for src, dst, label in edges:
        graph.add_edge(pydot.Edge(nodes[src], nodes[dst], label=label))
    return graph


def draw_net(caffe_net, rankdir, ext='png', phase=None, display_lrm=False):
    """Return the drawing of a NetParameter as bytes in format ``ext``
    (any graphviz output format: 'png', 'svg', 'pdf', 'dot', ...)."""
    graph = get_pydot_graph(caffe_net, rankdir, phase=phase,
                            display_lrm=display_lrm)
    return graph.create(format=ext)


def draw_net_to_file(caffe_net, filename, rankdir='LR', phase=None,
                     display_lrm=False):
    """Draw a NetParameter into ``filename``, in the format its extension
    names.  The extension '.raw' writes the graphviz source instead, to
    lay out with graphviz by hand."""
    base, dot, ext = filename.rpartition('.')
    if not dot or not base or '/' in ext:
        raise ValueError('cannot tell the image format of {!r}: give the '
                         'file an extension such as .png'.format(filename))
    if ext == 'raw':
        graph = get_pydot_graph(caffe_net, rankdir, phase=phase,
                                display_lrm=display_lrm)
        image = graph.to_string().encode('utf-8')
    else:
        image = draw_net(caffe_net, rankdir, ext, phase, display_lrm)
    with open(filename, 'wb') as out:
        out.write(image)
