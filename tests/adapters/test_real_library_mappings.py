"""test_real_library_mappings — the window mappings and refusals of the real-library
adapters (adapters/flashinfer_wrappers.py, adapters/sglang_triton.py), checked without
FlashInfer, sglang, torch or a GPU: what each adapter hands its library for a given
swadiff problem, and what it refuses with which reason.

Run: /usr/bin/python3 -m unittest discover -s tests/adapters   (numpy only)
"""
import importlib.util
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "adapters"))
import swadiff_adapter as sa  # noqa: E402
import flashinfer_wrappers as fi  # noqa: E402  (imports FlashInfer only when it runs)
import sglang_triton as sg  # noqa: E402


def load_aot():
    spec = importlib.util.spec_from_file_location("flashinfer_aot", os.path.join(ROOT, "ci", "flashinfer-aot.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def problem(**kw):
    p = dict(num_requests=1, qo_len=[8], kv_len=[40], num_qo_heads=4, num_kv_heads=2, head_dim=128,
             dtype="fp16", causal=True, window_left=5, window_right=-1, sm_scale=0.125, soft_cap=0.0,
             return_lse=True, page_size=16, num_pages=3, layout="NHD", attention_chunk_size=0)
    p.update(kw)
    return sa.normalize_problem(p)


class FlashInferMapping(unittest.TestCase):
    def test_window_left_is_passed_as_it_is_at_plan(self):
        for L in (-1, 0, 1, 5, 127):
            kw = fi.plan_kwargs(problem(window_left=L), "dt")
            self.assertEqual(kw["window_left"], L)
        self.assertEqual(fi.plan_kwargs(problem(window_left=5), "dt", window_at_plan=False)["window_left"], -1)

    def test_soft_cap_off_is_none_and_scale_is_passed(self):
        kw = fi.plan_kwargs(problem(soft_cap=0.0, sm_scale=0.3), "dt")
        self.assertIsNone(kw["logits_soft_cap"])
        self.assertEqual(kw["sm_scale"], 0.3)
        self.assertEqual(fi.plan_kwargs(problem(soft_cap=30.0), "dt")["logits_soft_cap"], 30.0)

    def test_non_causal_right_window_is_refused_with_the_reason(self):
        why = fi.refusal_reason(problem(causal=False, window_right=0), "paged_fa2")
        self.assertIn("no right window", why)
        self.assertIsNone(fi.refusal_reason(problem(causal=False, window_right=-1), "paged_fa2"),
                          "a left window only, non-causal, is FlashInfer's own")
        self.assertIsNone(fi.refusal_reason(problem(causal=False, window_left=-1, window_right=-1), "ragged_fa3"))
        # one decode row at p = kv_len - 1: no key lies right of it, so R changes nothing
        self.assertIsNone(fi.refusal_reason(problem(causal=False, window_right=3, qo_len=[1]), "decode"))

    def test_other_refusals(self):
        self.assertIn("fp32", fi.refusal_reason(problem(dtype="fp32"), "paged_fa2"))
        self.assertIn("chunked", fi.refusal_reason(problem(attention_chunk_size=8), "decode_tc"))
        self.assertIn("head_dim", fi.refusal_reason(problem(head_dim=96), "paged_fa3"))
        self.assertIsNone(fi.refusal_reason(problem(head_dim=96), "paged_fa2"))
        self.assertIn("decode cases only", fi.refusal_reason(problem(), "decode"))
        self.assertIsNone(fi.refusal_reason(problem(qo_len=[1]), "decode"))

    def test_a_pinned_split_is_declared_batch_invariant_where_plan_takes_it(self):
        self.assertTrue(fi.split_pinned({"fixed_split_size": 64}))
        self.assertTrue(fi.split_pinned({"disable_split_kv": True}))
        for extra in ({}, {"fixed_split_size": -1}, {"fixed_split_size": 0}, {"fixed_split_size": True},
                      {"fixed_split_size": "64"}, {"disable_split_kv": False}, {"disable_split_kv": 1}):
            self.assertFalse(fi.split_pinned(extra), extra)
        pinned = {"fixed_split_size": 64}
        for b in fi.BACKENDS:
            self.assertFalse(fi.declares_batch_invariant(b, {}), f"{b} declares nothing by default")
            self.assertEqual(fi.declares_batch_invariant(b, pinned), b in ("paged_fa2", "ragged_fa2", "decode_tc",
                                                                           "paged_fa2_window_at_forward"), b)

    def test_the_hello_carries_the_declaration(self):
        import json
        import subprocess
        script = os.path.join(ROOT, "adapters", "flashinfer_wrappers.py")
        def hello(extra):
            env = dict(os.environ)
            env.pop("SWADIFF_FLASHINFER_PLAN_EXTRA", None)
            if extra is not None:
                env["SWADIFF_FLASHINFER_PLAN_EXTRA"] = extra
            out = subprocess.run([sys.executable, script, "--describe"], env=env, capture_output=True, text=True,
                                 check=True).stdout
            return {b["name"]: b for b in json.loads(out)["backends"]}
        plain = hello(None)
        self.assertFalse(any(b.get("batch_invariant") for b in plain.values()))
        pinned = hello('{"fixed_split_size": 32}')
        self.assertTrue(pinned["paged_fa2"].get("batch_invariant"))
        self.assertTrue(pinned["decode_tc"].get("batch_invariant"))
        self.assertFalse(pinned["decode"].get("batch_invariant", False))
        self.assertFalse(pinned["paged_fa3"].get("batch_invariant", False))

    def test_module_keys_match_what_the_aot_script_builds(self):
        aot = load_aot()
        built = set(aot.wanted(list(aot.KINDS)))
        self.assertEqual(fi.module_key(problem(), "paged_fa2"), ("fa2", "fp16", 128, True, False))
        self.assertEqual(fi.module_key(problem(), "ragged_fa3"), ("fa3", "fp16", 128, True, False))
        self.assertEqual(fi.module_key(problem(qo_len=[1]), "decode"), ("decode", "fp16", 128, True, False))
        self.assertEqual(fi.module_key(problem(qo_len=[1]), "decode_tc"), ("fa2", "fp16", 128, True, False))
        # seed 000's pattern plans without the window: the module without the mask
        self.assertEqual(fi.module_key(problem(), "paged_fa2_window_at_forward"), ("fa2", "fp16", 128, False, False))
        self.assertEqual(fi.module_key(problem(soft_cap=50.0, dtype="bf16"), "paged_fa2"),
                         ("fa2", "bf16", 128, True, True))
        for b in fi.BACKENDS:
            self.assertIn(fi.module_key(problem(qo_len=[1]), b), built, b)
        self.assertNotIn(("fa3", "fp16", 96, True, False), built, "FlashInfer's fa3 has no head_dim 96")

    def test_every_backend_picks_an_explicit_flashinfer_backend(self):
        for name, (_, fi_backend, kinds) in fi.BACKENDS.items():
            self.assertIn(fi_backend, ("fa2", "fa3"), name)
            self.assertTrue(set(kinds) <= {"prefill", "decode"})


class SglangMapping(unittest.TestCase):
    def test_window_left_maps_to_sliding_window_size(self):
        self.assertEqual(sg.window_size(problem(window_left=-1)), -1)
        self.assertEqual(sg.window_size(problem(window_left=1)), 1)
        self.assertEqual(sg.window_size(problem(window_left=31)), 31)

    def test_window_left_zero_collides_with_sglangs_off(self):
        with self.assertRaises(sa.Unsupported) as cm:
            sg.window_size(problem(window_left=0))
        self.assertIn("0 means 'no window'", cm.exception.reason)

    def test_non_causal_window_is_two_sided_only(self):
        self.assertEqual(sg.window_size(problem(causal=False, window_left=4, window_right=4)), 4)
        self.assertEqual(sg.window_size(problem(causal=False, window_left=-1, window_right=-1)), -1)
        for L, R in ((4, -1), (4, 0), (-1, 3), (4, 2)):
            with self.assertRaises(sa.Unsupported, msg=(L, R)) as cm:
                sg.window_size(problem(causal=False, window_left=L, window_right=R))
            self.assertIn("two-sided", cm.exception.reason)

    def test_decode_keys_the_spec_window_holds(self):
        self.assertEqual(sg.decode_key_range(10, 3, "decode"), (6, 10))     # [p-3, p]: 4 keys
        self.assertEqual(sg.decode_key_range(10, 0, "decode"), (9, 10))     # one key
        self.assertEqual(sg.decode_key_range(10, -1, "decode"), (0, 10))
        self.assertEqual(sg.decode_key_range(10, 20, "decode"), (0, 10))

    def test_decode_keys_as_sglangs_backend_picks_them(self):
        # last min(seq_len, sliding_window_size = L) keys: one short of the spec's L + 1
        self.assertEqual(sg.decode_key_range(10, 3, "decode_backend_window"), (7, 10))
        # sliding_window_size 0 is "no window" there
        self.assertEqual(sg.decode_key_range(10, 0, "decode_backend_window"), (0, 10))
        self.assertEqual(sg.decode_key_range(10, -1, "decode_backend_window"), (0, 10))
        self.assertEqual(sg.decode_key_range(2, 3, "decode_backend_window"), (0, 2))

    def test_refusals(self):
        self.assertIn("qo_len 9 > kv_len 4", sg.refusal_reason(problem(qo_len=[9], kv_len=[4]), "extend"))
        self.assertIsNone(sg.refusal_reason(problem(qo_len=[9], kv_len=[9]), "extend"))
        self.assertIn("fp32", sg.refusal_reason(problem(dtype="fp32"), "extend"))
        self.assertIn("chunked", sg.refusal_reason(problem(attention_chunk_size=4), "decode"))


if __name__ == "__main__":
    unittest.main()


class PeerWheelPins(unittest.TestCase):
    """ci/peer-wheels.txt, read by ci/fetch-peer-wheels.sh with pip --require-hashes."""

    def test_every_pin_has_one_exact_version_and_a_sha256(self):
        import re
        with open(os.path.join(ROOT, "ci", "peer-wheels.txt")) as f:
            lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
        names = []
        for ln in lines:
            m = re.fullmatch(r"([a-z0-9][a-z0-9._-]*)==([0-9][0-9A-Za-z.+-]*) --hash=sha256:([0-9a-f]{64})", ln)
            self.assertIsNotNone(m, f"not 'name==version --hash=sha256:<64 hex>': {ln!r}")
            names.append(m.group(1))
        self.assertEqual(len(names), len(set(names)), "one version of each")
        for need in ("flashinfer-python", "apache-tvm-ffi", "sglang"):
            self.assertIn(need, names)
        self.assertNotIn("flashinfer-cubin", names, "must match flashinfer-python exactly or be left out")
        self.assertIn("flashinfer-python==" + fi.TESTED_VERSION + " ", " ".join(lines) + " ")
        self.assertIn("sglang==" + sg.TESTED_VERSION + " ", " ".join(lines) + " ")
