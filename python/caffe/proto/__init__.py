"""caffe.proto.caffe_pb2 is Doppio's schema (doppio.proto.doppio_pb2)."""
