"""The names of DistDGL that a generated module reads when it is imported (its DistDGL
runtime's classes, derived from DGL's RPC request, response and DistTensor, and the request's
registration). The stand-in runs no DistGraph: `isinstance(g, dgl.distributed.DistGraph)` is
False for its graphs, so the module takes its one-machine runtime, the one the GPU run checks."""


class DistGraph:
    pass


class DistTensor:
    pass


class rpc:  # noqa: N801  (a module in DGL: dgl.distributed.rpc)
    class Request:
        pass

    class Response:
        pass

    @staticmethod
    def register_service(service_id, request, response):
        pass
