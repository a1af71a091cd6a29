"""Tests of doppio.net_spec: the NetParameter a spec produces, checked
field by field and after a round trip through prototxt text."""

import pytest
from google.protobuf import text_format

from doppio import net_spec
from doppio.net_spec import NetSpec, layers as L, params as P
from doppio.proto import doppio_pb2


def lenet(batch_size):
    n = NetSpec()
    n.data, n.label = L.DummyData(
        shape=[dict(dim=[batch_size, 1, 28, 28]),
               dict(dim=[batch_size, 1, 1, 1])],
        transform_param=dict(scale=1. / 256), ntop=2)
    n.conv1 = L.Convolution(n.data, kernel_size=5, num_output=20,
                            weight_filler=dict(type='xavier'),
                            param=[dict(lr_mult=1), dict(lr_mult=2)])
    n.pool1 = L.Pooling(n.conv1, kernel_size=2, stride=2,
                        pool=P.Pooling.MAX)
    n.ip1 = L.InnerProduct(n.pool1, num_output=500)
    n.relu1 = L.ReLU(n.ip1, in_place=True)
    n.ip2 = L.InnerProduct(n.relu1, num_output=10)
    n.loss = L.SoftmaxWithLoss(n.ip2, n.label)
    return n.to_proto()


def reparse(net):
    """The net as Caffe would read it back from a prototxt file."""
    return text_format.Parse(str(net), doppio_pb2.NetParameter())


def test_lenet_layers_tops_and_bottoms():
    net = reparse(lenet(64))
    summary = [(lay.name, lay.type, list(lay.bottom), list(lay.top))
               for lay in net.layer]
    assert summary == [
        ('data', 'DummyData', [], ['data', 'label']),
        ('conv1', 'Convolution', ['data'], ['conv1']),
        ('pool1', 'Pooling', ['conv1'], ['pool1']),
        ('ip1', 'InnerProduct', ['pool1'], ['ip1']),
        ('relu1', 'ReLU', ['ip1'], ['ip1']),
        ('ip2', 'InnerProduct', ['ip1'], ['ip2']),
        ('loss', 'SoftmaxWithLoss', ['ip2', 'label'], ['loss']),
    ]


def test_lenet_parameters_land_in_their_messages():
    net = reparse(lenet(64))
    data, conv, pool, ip1 = net.layer[:4]
    assert [list(s.dim) for s in data.dummy_data_param.shape] == [
        [64, 1, 28, 28], [64, 1, 1, 1]]
    assert data.transform_param.scale == 1. / 256
    assert conv.convolution_param.num_output == 20
    assert list(conv.convolution_param.kernel_size) == [5]  # scalar -> [5]
    assert conv.convolution_param.weight_filler.type == 'xavier'
    assert [p.lr_mult for p in conv.param] == [1, 2]
    assert pool.pooling_param.pool == doppio_pb2.PoolingParameter.MAX
    assert pool.pooling_param.kernel_size == 2
    assert pool.pooling_param.stride == 2
    assert ip1.inner_product_param.num_output == 500
    assert not ip1.HasField('convolution_param')


def test_anonymous_tops_get_type_and_counter_names():
    data = L.Input(shape=dict(dim=[1, 3, 8, 8]))
    conv_a = L.Convolution(data, kernel_size=3, num_output=4)
    conv_b = L.Convolution(conv_a, kernel_size=3, num_output=4)
    relu = L.ReLU(conv_b, in_place=True)
    net = relu.to_proto()
    assert [(lay.name, list(lay.top)) for lay in net.layer] == [
        ('Input1', ['Input1']),
        ('Convolution1', ['Convolution1']),
        ('Convolution2', ['Convolution2']),
        ('ReLU1', ['Convolution2']),
    ]
    assert list(net.layer[0].input_param.shape[0].dim) == [1, 3, 8, 8]
    assert net_spec.to_proto(relu) == net


def test_shared_bottom_layer_is_emitted_once():
    n = NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 2]))
    n.a = L.InnerProduct(n.data, num_output=2)
    n.b = L.InnerProduct(n.data, num_output=2)
    n.sum = L.Eltwise(n.a, n.b, operation=P.Eltwise.SUM)
    net = n.to_proto()
    assert [lay.name for lay in net.layer] == ['data', 'a', 'b', 'sum']
    assert list(net.layer[3].bottom) == ['a', 'b']
    assert net.layer[3].eltwise_param.operation == \
        doppio_pb2.EltwiseParameter.SUM


def test_ntop_returns_tuples_and_functions():
    tops = L.DummyData(shape=dict(dim=[3]), ntop=3)
    assert isinstance(tops, tuple) and len(tops) == 3
    assert all(isinstance(t, net_spec.Top) for t in tops)
    assert [t.n for t in tops] == [0, 1, 2]
    sink = L.Silence(*tops, ntop=0)
    assert isinstance(sink, net_spec.Function)
    assert sink.tops == ()


def test_zero_top_layers_are_named_and_have_no_tops():
    n = NetSpec()
    n.data, n.data2 = L.DummyData(shape=dict(dim=[3]), ntop=2)
    n.silence_data = L.Silence(n.data, ntop=0)
    anon = L.Silence(n.data2, ntop=0)
    net = n.to_proto()
    assert [(lay.name, list(lay.top)) for lay in net.layer] == [
        ('data', ['data', 'data2']), ('silence_data', [])]
    alone = net_spec.to_proto(anon)
    assert [lay.name for lay in alone.layer] == ['DummyData1', 'Silence1']


def test_layer_level_fields_and_includes():
    n = NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 4]))
    n.loss = L.EuclideanLoss(n.data, n.data, loss_weight=0.5,
                             include=dict(phase=doppio_pb2.TRAIN),
                             propagate_down=[True, False])
    loss = reparse(n.to_proto()).layer[1]
    assert list(loss.loss_weight) == [0.5]
    assert len(loss.include) == 1
    assert loss.include[0].phase == doppio_pb2.TRAIN
    assert list(loss.propagate_down) == [True, False]


def test_deconvolution_uses_convolution_param():
    n = NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 4, 4]))
    n.up = L.Deconvolution(n.data, num_output=1, kernel_size=4, stride=2,
                           pad=[1, 1])
    param = n.to_proto().layer[1].convolution_param
    assert (param.num_output, list(param.kernel_size),
            list(param.stride), list(param.pad)) == (1, [4], [2], [1, 1])


def test_assign_proto_nested_and_repeated():
    layer = doppio_pb2.LayerParameter()
    net_spec.assign_proto(layer, 'convolution_param',
                          dict(pad=(1, 2), bias_filler=dict(value=0.1)))
    filler = doppio_pb2.FillerParameter(type='gaussian', std=0.5)
    net_spec.assign_proto(layer.convolution_param, 'weight_filler', filler)
    net_spec.assign_proto(layer, 'param', [doppio_pb2.ParamSpec(name='w')])
    net_spec.assign_proto(layer, 'bottom', 'x')
    assert list(layer.convolution_param.pad) == [1, 2]
    assert layer.convolution_param.bias_filler.value == pytest.approx(0.1)
    assert layer.convolution_param.weight_filler == filler
    assert layer.param[0].name == 'w'
    assert list(layer.bottom) == ['x']
    with pytest.raises(AttributeError, match="no field 'nope'"):
        net_spec.assign_proto(layer, 'nope', 1)


def test_params_give_enum_values():
    assert P.Pooling.MAX == 0
    assert P.Pooling.AVE == 1
    assert P.Pooling.STOCHASTIC == 2
    assert P.Eltwise.PROD == doppio_pb2.EltwiseParameter.PROD
    with pytest.raises(AttributeError, match='PoolingParameter.*MEDIAN'):
        P.Pooling.MEDIAN
    with pytest.raises(AttributeError, match='NoSuchParameter'):
        P.NoSuch


def test_param_name_dict_follows_the_schema():
    names = net_spec.param_name_dict()
    assert names['Convolution'] == 'convolution'
    assert names['InnerProduct'] == 'inner_product'
    assert names['HDF5Data'] == 'hdf5_data'
    assert names['Input'] == 'input'
    for type_name, prefix in names.items():
        assert hasattr(doppio_pb2.LayerParameter(), prefix + '_param')


def test_non_top_input_is_a_type_error():
    pair = L.DummyData(ntop=2)
    with pytest.raises(TypeError, match='Silence input 0 must be a Top, got '
                                        'tuple'):
        L.Silence(pair, ntop=0)


def test_unknown_keyword_is_reported_with_the_layer():
    n = NetSpec()
    n.data = L.Input(shape=dict(dim=[1]))
    n.conv = L.Convolution(n.data, kernel_sise=3)
    with pytest.raises(AttributeError,
                       match="Convolution layer 'conv': 'kernel_sise' is a "
                             "field of neither convolution_param nor"):
        n.to_proto()


def test_netspec_item_access_and_missing_names():
    n = NetSpec()
    n['data'] = L.Input(shape=dict(dim=[1]))
    assert n.data is n['data']
    assert not hasattr(n, 'missing')
    with pytest.raises(KeyError):
        n['missing']
    assert list(n.tops) == ['data']
