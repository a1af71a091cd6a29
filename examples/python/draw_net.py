"""Draw a net's graph into an image file: Caffe's python/draw_net.py.

Shows caffe.draw with a NetParameter read by protobuf's text_format.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/draw_net.py \\
        models/lenet/train_val.prototxt lenet.png --phase TRAIN

The image format is the output file's extension (png, svg, pdf, ...; .raw writes graphviz's
source); drawing needs python3-pydot and graphviz.
"""
from argparse import ArgumentDefaultsHelpFormatter, ArgumentParser

from google.protobuf import text_format

import caffe
import caffe.draw
from caffe.proto import caffe_pb2


def parse_args():
    parser = ArgumentParser(description=__doc__.split('\n')[0],
                            formatter_class=ArgumentDefaultsHelpFormatter)
    parser.add_argument('input_net_proto_file', help='Input network prototxt file')
    parser.add_argument('output_image_file', help='Output image file')
    parser.add_argument('--rankdir', default='LR',
                        help='One of TB (top-bottom), BT (bottom-top), LR (left-right) '
                             'or RL (right-left): the direction of the graph')
    parser.add_argument('--phase', default='ALL',
                        help='Which layers to draw: TRAIN, TEST, or ALL of them')
    parser.add_argument('--display_lrm', action='store_true',
                        help='Show the learning rate multipliers of learning layers')
    return parser.parse_args()


def main():
    args = parse_args()
    net = caffe_pb2.NetParameter()
    with open(args.input_net_proto_file) as f:
        text_format.Merge(f.read(), net)
    print('Drawing net to %s' % args.output_image_file)
    phase = {'TRAIN': caffe.TRAIN, 'TEST': caffe.TEST, 'ALL': None}[args.phase.upper()]
    caffe.draw.draw_net_to_file(net, args.output_image_file, args.rankdir, phase,
                                args.display_lrm)


if __name__ == '__main__':
    main()
