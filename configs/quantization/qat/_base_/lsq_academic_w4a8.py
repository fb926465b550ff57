# The papers' W4A8 setting of LSQ as a change to a W8A8 LSQ config's
# quantizer: AcademicQuantizer (fake quants on the inputs and weights of
# convs and linears), 4-bit per-channel weights, 8-bit activations, the
# first and the last layers kept at 8 bit, as LSQ does. Academic: no deploy
# backend runs it. A config lists this file after its W8A8 parent and sets
#   model = dict(quantizer=_base_.academic_w4a8_quantizer)
academic_w4a8_quantizer = dict(
    type='mmrazor_quant.AcademicQuantizer',
    first_last_bit=8,
    global_qconfig=dict(w_qscheme=dict(bit=4)))
