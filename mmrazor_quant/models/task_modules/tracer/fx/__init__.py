"""MMRazor's module path of the tracer (``tracer.fx``)."""
from .custom_tracer import (
                            CustomTracer,
                            UntracedMethodRegistry,
                            build_graphmodule,
                            custom_symbolic_trace,
)
from .graph_utils import (
                            del_fakequant_after_function,
                            del_fakequant_after_method,
                            del_fakequant_after_module,
                            del_fakequant_after_op,
                            del_fakequant_before_function,
                            del_fakequant_before_method,
                            del_fakequant_before_module,
                            del_fakequant_before_op,
)

__all__ = [
    'CustomTracer', 'UntracedMethodRegistry', 'custom_symbolic_trace',
    'build_graphmodule', 'del_fakequant_before_module',
    'del_fakequant_after_module', 'del_fakequant_after_function',
    'del_fakequant_before_function', 'del_fakequant_after_op',
    'del_fakequant_before_op', 'del_fakequant_before_method',
    'del_fakequant_after_method'
]
