"""Fingerprints of the "your turn" cells the book has shipped, every version (:func:`commlab.labs.cells.fingerprint`).

A cell whose fingerprint is here is still a skeleton, so running it never replaces the learner's saved code in
labs/mine (a newer notebook, or a cell reset by mistake). When a skeleton cell changes, add the new fingerprint
and keep the old ones (tests/dist/test_lab_mine.py lists any that are missing).
"""

SHIPPED_BY_LAB = {
    "bandwidth_sweep": (
        "89e01cd273feb3682afe481cdf8f289ea9b4a2e08daedd23b3f71f7f0cd86fb1",
        "a1596cf11dbe90d4bfa36d961be044a874f629507ede1d4e6ee0798d54dc1dcf",
        "a5f0436e915e53aea96b902299e444b1e66628c6995db71f56857dbb38562244",
        "8267d5a653cd774f1988fa89e01e511f46d2651ad6a3e9b6d8676ffefc323746",
    ),
    "build_your_own_ring": (
        "107e105e570286f732a92e36278e90f5ec943e92bc099ca16707a86ef1b64b9c",
        "486e04fa558a0cef32f82a15a5148123f0ec9f742d0af553bf963e9758807a31",
        "7e9a2bf34e23c5f608dd123a48d2d4f8c84efede45fa60c7dc11b44263ad1ecc",
        "99acb2712323f8f67535d9d15d851a7dcd61add9f2a08dc5153e3d0546dad78a",
        "af9b493c1acfc36d2e57dd36b13c1a15a9f39819950370f129fb2e5fd7d2c515",
        "bf711913e151748e4c72624e0848b882210a0c7170a9cea37c3d2c2e529137eb",
    ),
    "collectives": (
        "1f696632573a60ed8bc63cdeb5478736430298de9ab0a320ab5c66217a844f05",
        "3c31aae4bc34e2b8d83b9357e556c3fce58ca106efeb5dbc3fda4f0df97e9506",
        "7198b1e1f49c864dd3d5a2a53c23e83da5417007a56d6a66db9352317efb0ffb",
        "b0883aaf84a08c81085bf92dcaa2591d188dac5117e7f141a58c4fe171e68291",
        "d1e9dd9015fbafb078ed01de08167678b33ddbc31176d8fa6d2b153e43d58a2b",
    ),
    "ddp_overlap": (
        "07714f7c40f28aa9d37edbd4b2fc8b6cdeb2a2e714bb6c027560155c90f24c44",
        "609743750a02035cdb0c4685beca78837279c261d0b9ab8613bdd9a8272e2715",
        "68a59fdf4b25f4402becc9ceb967e809f9f7046939d87169412a6534f89dd257",
        "d8a0bade065d19d991c94a803aab255f88f23c20a0e183ed3f40518d2b18fa26",
    ),
    "ddp_zero": (
        "291ca3bcf283f5bcbc2c9985675e5a303e6f00f4601346f882f9cb0ab152c09b",
        "2ebf6d364abb11bd4ef7c793e3136b66dcfd7d329e5e07ed740310f06ae0b00c",
        "ba94f484c22ed2deb4725522dedbf66479f1182446ef7af5b18cea7e1323527e",
        "c63cd4daa308cc511e6013011b32e2453ff7c951d311363ffe587584ad8526f2",
        "ea794ac18568cdafb134e2e8d72ced30cd440d4bd58f2c97aac5355542d998c9",
    ),
    "find_the_hang": (
        "f984088ce9401891103ebb37e77d2173d209beb06131f226802154b3f3364083",
    ),
    "nccl_debug_multinode": (
        "38055b3cc21580bb1b55c4b70af95aa7f5365867d736e044604b410e3b044e92",
        "670b8bf3ed2f7767e0f07d5f500024691149d404bfbf3c5bf72c934c565bcb99",
        "c9e05ade660778fd9313397b7999b52dc3adb0562688a5281485babc70b5ee13",
    ),
    "p2p": (
        "3881c519b1aae46dbd4f9a2dec50446bbfdc82a9b02d76a4181579f2f039f318",
        "40a26a60898499de3b56fb4e9e0700209941c04ddcbecf83370282e14f10d6a9",
        "d61b84ff595f4105ac867f8bece86980e266120e27b9f9ad6e92de05a9a211cf",
        "fdcfed3bb7d98532c640478abae3ac2b33b3360ae5f119f2dafc33af4c659d45",
    ),
    "ring_vs_tree": (
        "0c78bdeb4cebb3ce125327bde5a5e51fa610c6f3efc64df02ec3c4c167bece57",
        "0eb84abe0c78404fb889980c8f513f01c147b01866cd68af0f62d468e657382f",
        "87fa2f3c1662c0e0dfe96f90dfb6966103477cf86aec70f7644eec75ab7ab7a2",
        "92ab804b7a0c8b8d1ddd8412b1155f3d2546a6521263a49959ab376bd5df6fb7",
        "d87912f401248b3370f6a3cea2638f51a7c1f4cbe35d6dd6e2808a0b0b33fd31",
    ),
    "topology": (
        "aac3ef78fe0a51ce01109536e77005aee45f408345e552d81921d92c7d54840b",
        "bacca721fbd317a4f39d65211d8b76179e75745ca974e41f488a5ca1a94c6c9b",
        "d9b3d0e993a69881a4b496a00380e19b64755e896ebc05772f1c77e1a55b7e84",
    ),
}

SHIPPED = frozenset(h for fingerprints in SHIPPED_BY_LAB.values() for h in fingerprints)
