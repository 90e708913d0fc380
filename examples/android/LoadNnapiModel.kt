// Loading a model converted by nnapi-convert in an Android app (Kotlin).
//
// Converted with, for example:
//   nnapi-convert mobilenet.pt --input 1x3x224x224 --nhwc --lite -o mobilenet.nnapi.pt
// which writes mobilenet.nnapi.pt (TorchScript, for org.pytorch.Module) and
// mobilenet.nnapi.ptl (lite interpreter, for org.pytorch.LiteModuleLoader). Put one
// of them in src/main/assets/ and depend on the matching PyTorch Android library,
// of the LibTorch version that converted it (Debian bookworm: 1.13):
//   implementation("org.pytorch:pytorch_android:1.13.1")       // Module.load, .nnapi.pt
//   implementation("org.pytorch:pytorch_android_lite:1.13.1")  // LiteModuleLoader, .nnapi.ptl
// Written for PyTorch Android 1.13.1, whose lite runtime reads bytecode versions 4 to 9: the
// .nnapi.ptl --lite writes (bytecode version 8) loads as it is. An app on an older
// pytorch_android_lite needs the .ptl at a version it reads: --lite-bytecode-version 7 for
// 1.10.0, 5 for 1.9.0 (docs/cli.md, "Lite-interpreter bytecode versions").
// The NNAPI model is compiled on the device the first time forward runs (Android
// 8.1+, API 27); its inputs keep PyTorch's NCHW shape.
//
// A snippet, not built here.
package com.example.nnapi

import android.content.Context
import java.io.File
import org.pytorch.IValue
import org.pytorch.LiteModuleLoader
import org.pytorch.MemoryFormat
import org.pytorch.Module
import org.pytorch.Tensor

object NnapiModel {
    // The PyTorch loaders read files, not assets: copy the asset once.
    private fun assetFile(context: Context, name: String): String {
        val file = File(context.filesDir, name)
        if (!file.exists()) {
            context.assets.open(name).use { input ->
                file.outputStream().use { output -> input.copyTo(output) }
            }
        }
        return file.absolutePath
    }

    // .nnapi.pt needs the full runtime (pytorch_android), .nnapi.ptl the lite one.
    fun load(context: Context, assetName: String): Module {
        val path = assetFile(context, assetName)
        return if (assetName.endsWith(".ptl")) LiteModuleLoader.load(path) else Module.load(path)
    }

    // One forward pass on a 1x3xHxW float image. `pixels` holds the values in
    // channels-last order (H, W, C: how bitmaps store them) because the model
    // was converted with --nhwc; without --nhwc, pass NCHW values and
    // MemoryFormat.CONTIGUOUS.
    fun classify(module: Module, pixels: FloatArray, height: Long, width: Long): FloatArray {
        val shape = longArrayOf(1, 3, height, width)
        val input = Tensor.fromBlob(pixels, shape, MemoryFormat.CHANNELS_LAST)
        val output = module.forward(IValue.from(input)).toTensor()
        return output.dataAsFloatArray
    }
}

// Usage, e.g. in an Activity (off the main thread: the first call compiles):
//   val module = NnapiModel.load(this, "mobilenet.nnapi.ptl")
//   val scores = NnapiModel.classify(module, pixels, 224, 224)
//   val best = scores.indices.maxByOrNull { scores[it] }
