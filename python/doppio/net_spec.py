"""Write nets in Python and turn them into NetParameter messages.

This is pycaffe's ``caffe.net_spec``: ``layers`` (imported as ``L``) makes
layer calls such as ``L.Convolution(bottom, kernel_size=3, num_output=8)``
that return Tops, ``params`` (``P``) gives enum constants such as
``P.Pooling.MAX``, and ``NetSpec`` names the Tops assigned to it::

    n = NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 3, 8, 8]))
    n.conv = L.Convolution(n.data, kernel_size=3, num_output=4)
    n.relu = L.ReLU(n.conv, in_place=True)
    net_param = n.to_proto()

Keyword arguments go to the layer's own ``<type>_param`` message when it
has that field and to LayerParameter otherwise; keywords ending in
``param`` always go to LayerParameter.  Lists fill repeated fields, dicts
fill messages.  Blobs and layers without a name get ``<Type><k>``.
"""

from collections import Counter, OrderedDict

from google.protobuf.descriptor import FieldDescriptor

from .proto import doppio_pb2 as caffe_pb2


# Layer types that read another type's parameter message.
_SHARED_PARAMS = {'Deconvolution': 'convolution', 'Im2col': 'convolution',
                  'SoftmaxWithLoss': 'softmax'}


def param_name_dict():
    """Map each layer type name to the prefix of its parameter field, e.g.
    'Convolution' -> 'convolution' for convolution_param.

    The map is read from LayerParameter's ``*_param`` fields and their
    message names (ConvolutionParameter), so it follows the schema.
    """
    names = {}
    for field in caffe_pb2.LayerParameter.DESCRIPTOR.fields:
        if (field.name.endswith('_param')
                and field.type == FieldDescriptor.TYPE_MESSAGE
                and field.message_type.name.endswith('Parameter')):
            type_name = field.message_type.name[:-len('Parameter')]
            names[type_name] = field.name[:-len('_param')]
    return names


def _field(proto, name):
    field = proto.DESCRIPTOR.fields_by_name.get(name)
    if field is None:
        raise AttributeError('{} has no field {!r}'.format(
            proto.DESCRIPTOR.name, name))
    return field


def assign_proto(proto, name, val):
    """Set field ``name`` of message ``proto`` from a Python value.

    Dicts fill message fields key by key (recursively), lists fill
    repeated fields (a list of dicts adds one message per dict), and a
    single value given for a repeated field counts as a one-element list,
    so ``kernel_size=3`` and ``kernel_size=[3]`` mean the same.
    """
    field = _field(proto, name)
    is_message = field.type == FieldDescriptor.TYPE_MESSAGE
    if field.label == FieldDescriptor.LABEL_REPEATED:
        items = list(val) if isinstance(val, (list, tuple)) else [val]
        container = getattr(proto, name)
        for item in items:
            if isinstance(item, dict):
                entry = container.add()
                for key, value in item.items():
                    assign_proto(entry, key, value)
            elif is_message:
                container.add().CopyFrom(item)
            else:
                container.append(item)
    elif isinstance(val, dict):
        message = getattr(proto, name)
        message.SetInParent()
        for key, value in val.items():
            assign_proto(message, key, value)
    elif is_message:
        getattr(proto, name).CopyFrom(val)
    else:
        setattr(proto, name, val)


def to_proto(*tops):
    """Return a NetParameter with every layer needed to compute ``tops``
    (Tops, or the Functions of zero-top layers), naming all blobs and
    layers automatically."""
    layers = OrderedDict()
    names = {}
    autonames = Counter()
    for top in tops:
        top._to_proto(layers, names, autonames)
    net = caffe_pb2.NetParameter()
    net.layer.extend(layers.values())
    return net


class Top:
    """One output blob of a layer: the ``n``-th top of Function ``fn``."""

    def __init__(self, fn, n):
        self.fn = fn
        self.n = n

    def to_proto(self):
        """Return a NetParameter with every layer this top depends on."""
        return to_proto(self)

    def _to_proto(self, layers, names, autonames):
        return self.fn._to_proto(layers, names, autonames)


class Function:
    """A layer: its type, its input Tops and its keyword parameters.

    Two keywords are not layer fields: ``ntop`` (how many tops the layer
    makes; 0 for sinks such as Silence) and ``in_place`` (the layer's tops
    are its bottoms, as for an in-place ReLU).
    """

    def __init__(self, type_name, inputs, params):
        self.type_name = type_name
        for index, bottom in enumerate(inputs):
            if not isinstance(bottom, Top):
                raise TypeError('{} input {} must be a Top, got {}'.format(
                    type_name, index, type(bottom).__name__))
        self.inputs = tuple(inputs)
        self.params = dict(params)
        self.ntop = self.params.pop('ntop', 1)
        self.in_place = self.params.pop('in_place', False)
        self.tops = tuple(Top(self, n) for n in range(self.ntop))

    def _autoname(self, autonames):
        autonames[self.type_name] += 1
        return self.type_name + str(autonames[self.type_name])

    def _get_top_name(self, top, names, autonames):
        if top not in names:
            names[top] = top.fn._autoname(autonames)
        return names[top]

    def _get_name(self, names, autonames):
        """The layer's name: its own if assigned, else its first top's."""
        if self not in names:
            if self.ntop > 0:
                names[self] = self._get_top_name(self.tops[0], names,
                                                 autonames)
            else:
                names[self] = self._autoname(autonames)
        return names[self]

    def _param_prefix(self):
        return _SHARED_PARAMS.get(self.type_name,
                                  _param_names.get(self.type_name))

    def _to_proto(self, layers, names, autonames):
        if self in layers:
            return
        bottoms = []
        for bottom in self.inputs:
            bottom._to_proto(layers, names, autonames)
            bottoms.append(layers[bottom.fn].top[bottom.n])
        layer = caffe_pb2.LayerParameter()
        layer.type = self.type_name
        layer.bottom.extend(bottoms)
        if self.in_place:
            layer.top.extend(layer.bottom)
        else:
            layer.top.extend(self._get_top_name(top, names, autonames)
                             for top in self.tops)
        layer.name = self._get_name(names, autonames)

        prefix = self._param_prefix()
        own = None
        if prefix is not None:
            own = getattr(layer, prefix + '_param', None)
        for key, value in self.params.items():
            if (not key.endswith('param') and own is not None
                    and key in own.DESCRIPTOR.fields_by_name):
                assign_proto(own, key, value)
            elif key in layer.DESCRIPTOR.fields_by_name:
                assign_proto(layer, key, value)
            else:
                if own is not None:
                    where = 'a field of neither {}_param nor'.format(prefix)
                else:
                    where = 'not a field of'
                raise AttributeError('{} layer {!r}: {!r} is {} '
                                     'LayerParameter'.format(
                                         self.type_name, layer.name, key,
                                         where))
        layers[self] = layer


class NetSpec:
    """A set of named Tops; to_proto() builds the layers that produce them,
    naming each assigned Top (and the layer making it) by its attribute."""

    def __init__(self):
        super().__setattr__('tops', OrderedDict())

    def __setattr__(self, name, value):
        self.tops[name] = value

    def __getattr__(self, name):
        try:
            return self.tops[name]
        except KeyError:
            raise AttributeError('NetSpec has no top {!r}'.format(name)) \
                from None

    def __setitem__(self, key, value):
        self.tops[key] = value

    def __getitem__(self, key):
        return self.tops[key]

    def to_proto(self):
        """Return a NetParameter with the layers for all assigned Tops."""
        names = {top: name for name, top in self.tops.items()}
        autonames = Counter()
        layers = OrderedDict()
        for top in self.tops.values():
            top._to_proto(layers, names, autonames)
        net = caffe_pb2.NetParameter()
        net.layer.extend(layers.values())
        return net


class Layers:
    """``layers.<Type>(*bottoms, **params)`` specifies a layer of that type.

    It returns the layer's Top, a tuple of Tops when ntop > 1, or the
    Function itself when ntop is 0 (the layer has no top to pass on).
    """

    def __getattr__(self, type_name):
        if type_name.startswith('_'):
            raise AttributeError(type_name)

        def layer_fn(*args, **kwargs):
            fn = Function(type_name, args, kwargs)
            if fn.ntop == 0:
                return fn
            if fn.ntop == 1:
                return fn.tops[0]
            return fn.tops
        layer_fn.__name__ = type_name
        return layer_fn


class _ParamEnums:
    """The constants of one parameter message, e.g. PoolingParameter's."""

    def __init__(self, message):
        self._message = message

    def __getattr__(self, name):
        if name.startswith('_'):
            raise AttributeError(name)
        try:
            return getattr(self._message, name)
        except AttributeError:
            raise AttributeError('{} has no constant {!r}'.format(
                self._message.DESCRIPTOR.name, name)) from None


class Parameters:
    """``params.<Type>.<CONSTANT>`` is an enum value of <Type>Parameter,
    e.g. ``params.Pooling.MAX``."""

    def __getattr__(self, type_name):
        if type_name.startswith('_'):
            raise AttributeError(type_name)
        message = getattr(caffe_pb2, type_name + 'Parameter', None)
        if message is None:
            raise AttributeError('the schema has no {}Parameter message'
                                 .format(type_name))
        return _ParamEnums(message)


_param_names = param_name_dict()
layers = Layers()
params = Parameters()
